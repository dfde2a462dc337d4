import type { RequestContext } from '@estate/platform/auth';
import type { Logger } from 'pino';
import type { ListingLookup } from './clients/listings.client';
import { summaryOf } from './events/listing-projection.subscriber';
import type { KnownListings, ListingSummaryRepository } from './repositories/listing-summary.repository';

/**
 * Read-your-writes for the listings a lead is interested in: before a capture writes its interests, the listings
 * the events have not brought yet are asked of the listings service, and what it answers is recorded as the
 * `created` event would record it (same idempotent write). The lead's score, its routing and its answer then see
 * the listing (from what this read returns, without reading again). Asked only when a capture names listings, so reads
 * never wait on another service.
 */
export class ListingSummariesService {
  constructor(private readonly deps: { summaries: ListingSummaryRepository; listings: ListingLookup; log: Logger }) {}

  /** The summaries of these listings, as the capture then scores and answers with them (no second read). */
  async learn(ctx: RequestContext, listingIds: readonly string[]): Promise<KnownListings> {
    const { summaries, listings, log } = this.deps;
    const { known, unheard } = await summaries.lookup(ctx.who.accountId, listingIds);
    if (unheard.length === 0) return known;
    await Promise.all(
      unheard.map(async (listingId) => {
        try {
          const found = await listings.find(ctx.who, listingId, ctx.requestId);
          if (found) await summaries.applyListing(ctx.who.accountId, listingId, found.version, summaryOf(found));
        } catch (err) {
          // The capture goes on without the summary (the listing's event brings it): a lead is never lost to this.
          log.warn({ err, listingId, requestId: ctx.requestId }, 'could not ask the listings service about a listing');
        }
      }),
    );
    // Some were asked of the listings service: read them all again, as they are stored now.
    const fresh = await summaries.resolve(ctx.who.accountId, listingIds);
    return { ids: new Set(listingIds), summaries: fresh };
  }
}
