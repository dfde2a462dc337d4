import { EVENT_CONCURRENCY, type Bus, type Subscription } from '@estate/bus';
import type { ListingProjectionService } from '../listing-projection.service';

const DURABLE = 'media-listings';

/**
 * The listings this service serves media for, from the listing events: which exist and which
 * account owns each (so an upload needs no call to the listings service), and the cascade when
 * one is deleted. Handlers are idempotent: an event seen twice or late changes nothing.
 */
export class ListingsSubscriber {
  private subscription: Subscription | undefined;

  constructor(private readonly deps: { bus: Bus; listings: ListingProjectionService }) {}

  async start(): Promise<void> {
    const subjects = ['listings.listing.created', 'listings.listing.updated', 'listings.listing.deleted'] as const;
    this.subscription = await this.deps.bus.subscribe(
      subjects,
      {
        durable: DURABLE,
        concurrency: EVENT_CONCURRENCY,
        orderKey: (m) => m.payload.listingId,
      },
      async (m) => {
        if (m.subject === 'listings.listing.deleted') await this.deps.listings.listingDeleted(m.payload);
        else await this.deps.listings.listingChanged(m.payload);
      },
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}
