import {
  emptyMediaSummary,
  type Listing,
  type ListingCreate,
  type ListingMedia,
  type ListingStatus,
} from '@estate/contracts/listings';

/** Roles that create, change and delete listings. */
export const LISTING_WRITERS = ['admin', 'integration'] as const;
/** Roles that read and search listings. */
export const LISTING_READERS = ['admin', 'integration', 'agent'] as const;

/** Statuses that put a listing on the market; the first time one is reached sets `listedAt`. */
const MARKET_STATUSES: readonly ListingStatus[] = ['active', 'coming_soon'];

export function pricePerArea(input: Pick<ListingCreate, 'pricing' | 'propertyDetails'>): number | null {
  const area = input.propertyDetails.livingArea;
  if (!area) return null;
  return Math.round((input.pricing.listPrice / area) * 100) / 100;
}

/** The key that makes `externalId` + `source` unique within an account (one stored field, see the store port). */
export function externalKey(accountId: string, input: { source?: string; externalId?: string }): string | undefined {
  return input.source && input.externalId ? `${accountId}|${input.source}|${input.externalId}` : undefined;
}

export function listedAtFor(
  input: Pick<ListingCreate, 'status' | 'listedAt'>,
  previous: string | null,
  now: string,
): string | null {
  if (input.listedAt) return new Date(input.listedAt).toISOString();
  if (previous) return previous;
  return MARKET_STATUSES.includes(input.status) ? now : null;
}

/** The client-writable part of a stored listing: what a merge patch applies to. */
export function writableView(listing: Listing): Record<string, unknown> {
  const { id, version, createdAt, updatedAt, media, pricing, sourceMissing: _feedOwned, ...rest } = listing;
  const { pricePerArea: _derived, ...writablePricing } = pricing;
  const view: Record<string, unknown> = { ...rest, pricing: writablePricing };
  if (view.listedAt === null) delete view.listedAt;
  return view;
}

/** A full listing from validated input and what the server owns. */
export function buildListing(
  input: ListingCreate,
  owned: {
    id: string;
    version: number;
    createdAt: string;
    updatedAt: string;
    listedAt: string | null;
    media?: ListingMedia;
  },
): Listing {
  return {
    id: owned.id,
    ...(input.externalId ? { externalId: input.externalId, source: input.source } : {}),
    ...(input.mlsNumber ? { mlsNumber: input.mlsNumber } : {}),
    status: input.status,
    pricing: { ...input.pricing, pricePerArea: pricePerArea(input) },
    propertyDetails: input.propertyDetails,
    location: input.location,
    media: owned.media ?? emptyMediaSummary,
    listedAt: owned.listedAt,
    sourceMissing: null,
    version: owned.version,
    createdAt: owned.createdAt,
    updatedAt: owned.updatedAt,
  };
}

/** Media changes that always change what is shown: an image ready (or failed), an edit, a new order, a deletion. */
const SHOWN_CHANGES = new Set(['processed', 'updated', 'reordered', 'deleted']);

/**
 * The listing's media after a media change: the media service's summary, and `photosChangedAt` moved to the time of
 * the change when the change alters what is shown (an upload of an image still processing does not; a new tour,
 * shown at once, does: its summary differs).
 */
export function mediaAfterChange(
  current: ListingMedia,
  event: { change: string; occurredAt: string; summary: Omit<ListingMedia, 'photosChangedAt'> },
): ListingMedia {
  const { photosChangedAt: _at, ...shown } = current;
  const changed = SHOWN_CHANGES.has(event.change) || JSON.stringify(shown) !== JSON.stringify(event.summary);
  return { ...event.summary, photosChangedAt: changed ? event.occurredAt : (current.photosChangedAt ?? null) };
}
