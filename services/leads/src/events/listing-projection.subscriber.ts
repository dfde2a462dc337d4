import type { Bus, Subscription } from '@estate/bus';
import type { Listing } from '@estate/contracts/listings';
import type { LeadListingSummary } from '@estate/contracts/leads';
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
 */
export async function subscribeListingProjection(deps: { bus: Bus; summaries: ListingSummaryRepository; log: Logger }): Promise<Subscription[]> {
  const listings = await deps.bus.subscribe(
    ['listings.listing.created', 'listings.listing.updated', 'listings.listing.deleted'],
    { durable: 'leads-listing-summaries' },
    async (message) => {
      const p = message.payload;
      const summary = message.subject === 'listings.listing.deleted' ? null : summaryOf(message.payload.listing);
      const applied = await deps.summaries.applyListing(p.accountId, p.listingId, p.version, summary);
      deps.log.debug({ subject: message.subject, listingId: p.listingId, version: p.version, applied, requestId: message.requestId }, 'listing summary');
    },
  );
  const media = await deps.bus.subscribe(['media.media.changed'], { durable: 'leads-listing-photos' }, async ({ payload: p, requestId }) => {
    const photo = p.summary.primaryPhoto;
    const applied = await deps.summaries.applyMedia(p.accountId, p.listingId, p.version, photo ? { id: photo.id, urls: photo.urls } : null);
    deps.log.debug({ listingId: p.listingId, version: p.version, applied, requestId }, 'listing photo');
  });
  return [listings, media];
}
