import { EVENT_CONCURRENCY, type Bus, type Subscription, type UnitOfWork } from '@estate/bus';
import type { LeadListingSummary } from '@estate/contracts/leads';
import type { Listing } from '@estate/contracts/listings';
import type { Logger } from 'pino';
import type { ListingSummaryRepository } from '../repositories/listing-summary.repository';

/** What a lead shows of a listing it is interested in. */
export function summaryOf(listing: Listing): LeadListingSummary {
  const photo = listing.media.primaryPhoto;
  return {
    id: listing.id,
    status: listing.status,
    propertyType: listing.propertyDetails.propertyType,
    price: { listPrice: listing.pricing.listPrice, currency: listing.pricing.currency },
    address: { ...listing.location.address },
    primaryPhoto: photo ? { id: photo.id, urls: photo.urls } : null,
    updatedAt: listing.updatedAt,
  };
}

/**
 * Keeps the listing summaries leads show (address, price, status, primary photo) from listing and
 * media events: no call to the listings service per lead. Durable consumers, idempotent by version.
 * Each write is a unit of work, so the writes of events handled at once commit together where the store
 * groups units (SQLite: one commit for a burst of listing events, such as a bulk job's).
 */
export class ListingProjectionSubscriber {
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly deps: { bus: Bus; summaries: ListingSummaryRepository; units: UnitOfWork; log: Logger },
  ) {}

  async start(): Promise<void> {
    const { bus, summaries, units, log } = this.deps;
    const listings = await bus.subscribe(
      ['listings.listing.created', 'listings.listing.updated', 'listings.listing.deleted'],
      { durable: 'leads-listing-summaries', concurrency: EVENT_CONCURRENCY, orderKey: (m) => m.payload.listingId },
      async (message) => {
        const p = message.payload;
        const summary = message.subject === 'listings.listing.deleted' ? null : summaryOf(message.payload.listing);
        const applied = await units.run(() => summaries.applyListing(p.accountId, p.listingId, p.version, summary));
        log.debug(
          {
            subject: message.subject,
            listingId: p.listingId,
            version: p.version,
            applied,
            requestId: message.requestId,
          },
          'listing summary',
        );
      },
    );
    this.subscriptions.push(listings);
    const media = await bus.subscribe(
      ['media.media.changed'],
      { durable: 'leads-listing-photos', concurrency: EVENT_CONCURRENCY, orderKey: (m) => m.payload.listingId },
      async ({ payload: p, requestId }) => {
        const photo = p.summary.primaryPhoto;
        const applied = await units.run(() =>
          summaries.applyMedia(p.accountId, p.listingId, p.version, photo ? { id: photo.id, urls: photo.urls } : null),
        );
        log.debug({ listingId: p.listingId, version: p.version, applied, requestId }, 'listing photo');
      },
    );
    this.subscriptions.push(media);
  }

  async stop(): Promise<void> {
    const subscriptions = this.subscriptions;
    this.subscriptions = [];
    await Promise.all(subscriptions.map((s) => s.stop()));
  }
}
