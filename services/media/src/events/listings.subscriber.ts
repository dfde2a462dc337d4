import type { Bus, Subscription } from '@estate/bus';
import type { MediaProcessingService } from '../media-processing.service';

const DURABLE = 'media-listings';

/**
 * The listings this service serves media for, from the listing events: which exist and which
 * account owns each (so an upload needs no call to the listings service), and the cascade when
 * one is deleted. Handlers are idempotent: an event seen twice or late changes nothing.
 */
export function subscribeListings(bus: Bus, processing: MediaProcessingService): Promise<Subscription> {
  return bus.subscribe(['listings.listing.created', 'listings.listing.updated', 'listings.listing.deleted'], { durable: DURABLE }, async (m) => {
    if (m.subject === 'listings.listing.deleted') await processing.listingDeleted(m.payload);
    else await processing.listingChanged(m.payload);
  });
}
