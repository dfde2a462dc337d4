import { randomBytes } from 'node:crypto';
import type { Identity } from '@estate/contracts/accounts';
import { listingCreate, type Listing, type ListingCreate, type ListingPatch, type ListingSearchQuery } from '@estate/contracts/listings';
import { outboxEntry, type OutboxRelay } from '@estate/bus';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { decodeCursor, keyset, pageOf, parseSort, type SortOrder } from '@estate/platform/pagination';
import { DuplicateKeyError, type Filter } from '@estate/store';
import type { Logger } from 'pino';
import { buildListing, externalKey, listedAtFor, writableView } from './listing.rules';
import type { ListingRepository } from './repositories/listing.repository';

export interface ListingsDeps {
  listings: ListingRepository;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

export interface WriteContext {
  who: Identity;
  requestId?: string;
}

const WRITERS = ['admin', 'integration'] as const;
const READERS = ['admin', 'integration', 'agent'] as const;
const MAX_CAS_RETRIES = 5;

const SORT_FIELDS: Record<string, string> = {
  listPrice: 'pricing.listPrice',
  listedAt: 'listedAt',
  updatedAt: 'updatedAt',
  createdAt: 'createdAt',
};
const DEFAULT_ORDER: SortOrder = { field: 'createdAt', direction: -1 };

export function newListingId(): string {
  return `lst_${randomBytes(12).toString('base64url')}`;
}

export class ListingsService {
  constructor(private readonly deps: ListingsDeps) {}

  async create(ctx: WriteContext, input: ListingCreate): Promise<Listing> {
    assertRole(ctx.who, WRITERS, 'create listings');
    const now = this.deps.clock().toISOString();
    const listing = buildListing(input, { id: newListingId(), version: 1, createdAt: now, updatedAt: now, listedAt: listedAtFor(input, null, now) });
    const key = externalKey(ctx.who.accountId, input);
    const event = outboxEntry('listings.listing.created', { accountId: ctx.who.accountId, listingId: listing.id, version: 1, occurredAt: now, listing }, ctx.requestId);
    try {
      await this.deps.listings.insert(ctx.who.accountId, listing, key, event);
    } catch (err) {
      if (err instanceof DuplicateKeyError && key) {
        const existing = await this.deps.listings.findByExternalKey(key);
        throw new AppError('listing_exists', `A listing with externalId ${input.externalId} from ${input.source} already exists`, {
          fields: existing ? { existingId: existing.id } : {},
        });
      }
      throw err;
    }
    this.deps.outbox.kick();
    return listing;
  }

  async get(who: Identity, id: string): Promise<Listing> {
    assertRole(who, READERS, 'read listings');
    const found = await this.deps.listings.get(who.accountId, id);
    if (!found) throw notFound('listing_not_found', 'Listing', id);
    return found;
  }

  /** Applies a JSON merge patch; `ifMatch` (the version the client saw) makes it conditional. */
  async update(ctx: WriteContext, id: string, patch: ListingPatch, ifMatch?: number): Promise<Listing> {
    assertRole(ctx.who, WRITERS, 'change listings');
    for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
      const current = await this.get(ctx.who, id);
      if (ifMatch !== undefined && ifMatch !== current.version) {
        throw new AppError('version_mismatch', `The listing is at version ${current.version}, not ${ifMatch}`, { fields: { currentVersion: current.version } });
      }
      const parsed = listingCreate.safeParse(applyMergePatch(writableView(current), patch));
      if (!parsed.success) throw validationError(parsed.error, [], 'The listing would not be valid after this change');
      const now = this.deps.clock().toISOString();
      const next = buildListing(parsed.data, {
        id,
        version: current.version + 1,
        createdAt: current.createdAt,
        updatedAt: now,
        listedAt: listedAtFor(parsed.data, current.listedAt, now),
        media: current.media,
      });
      const event = outboxEntry('listings.listing.updated', { accountId: ctx.who.accountId, listingId: id, version: next.version, occurredAt: now, listing: next }, ctx.requestId);
      try {
        const saved = await this.deps.listings.replace(ctx.who.accountId, next, externalKey(ctx.who.accountId, parsed.data), current.version, event);
        if (saved) {
          this.deps.outbox.kick();
          return saved;
        }
      } catch (err) {
        if (err instanceof DuplicateKeyError) {
          throw new AppError('listing_exists', `Another listing already has externalId ${parsed.data.externalId} from ${parsed.data.source}`);
        }
        throw err;
      }
      if (ifMatch !== undefined) throw new AppError('version_mismatch', 'The listing changed while this update was applied');
    }
    throw new AppError('conflict', 'The listing is changing too often to apply this update; retry');
  }

  async remove(ctx: WriteContext, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(ctx.who, WRITERS, 'delete listings');
    for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
      const current = await this.get(ctx.who, id);
      if (ifMatch !== undefined && ifMatch !== current.version) {
        throw new AppError('version_mismatch', `The listing is at version ${current.version}, not ${ifMatch}`);
      }
      const now = this.deps.clock().toISOString();
      const event = outboxEntry('listings.listing.deleted', { accountId: ctx.who.accountId, listingId: id, version: current.version + 1, occurredAt: now }, ctx.requestId);
      if (await this.deps.listings.tombstone(ctx.who.accountId, id, current.version, event)) {
        this.deps.outbox.kick();
        return { id, deleted: true };
      }
    }
    throw new AppError('conflict', 'The listing is changing too often to delete it; retry');
  }

  async search(who: Identity, query: ListingSearchQuery): Promise<{ items: Listing[]; nextCursor: string | null; total: number }> {
    assertRole(who, READERS, 'read listings');
    if (query.minPrice !== undefined && query.maxPrice !== undefined && query.minPrice > query.maxPrice) {
      throw new AppError('validation_failed', 'minPrice is above maxPrice', { errors: [{ path: 'minPrice', message: 'must not be above maxPrice' }] });
    }
    const filter: Filter = { accountId: who.accountId };
    if (query.status) filter.status = { $in: query.status };
    if (query.propertyType) filter['propertyDetails.propertyType'] = { $in: query.propertyType };
    if (query.city) filter['location.address.city'] = query.city;
    if (query.stateOrProvince) filter['location.address.stateOrProvince'] = query.stateOrProvince;
    if (query.postalCode) filter['location.address.postalCode'] = query.postalCode;
    if (query.source) filter.source = query.source;
    if (query.externalId) filter.externalId = query.externalId;
    if (query.minPrice !== undefined || query.maxPrice !== undefined) {
      filter['pricing.listPrice'] = {
        ...(query.minPrice !== undefined ? { $gte: query.minPrice } : {}),
        ...(query.maxPrice !== undefined ? { $lte: query.maxPrice } : {}),
      };
    }
    const order = parseSort(query.sort, SORT_FIELDS, DEFAULT_ORDER);
    const { sort, after } = keyset(order, decodeCursor(query.cursor));
    const [fetched, total] = await Promise.all([
      this.deps.listings.find(after ? { $and: [filter, after] } : filter, { sort, limit: query.limit + 1 }),
      this.deps.listings.count(filter),
    ]);
    return { ...pageOf(fetched, query.limit, order), total };
  }
}
