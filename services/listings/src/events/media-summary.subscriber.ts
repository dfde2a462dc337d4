import { EVENT_CONCURRENCY, outboxEntry, type Bus, type OutboxRelay, type Subscription } from '@estate/bus';
import type { EventPayload } from '@estate/contracts/events';
import type { Logger } from 'pino';
import { mediaAfterChange } from '../listing.rules';
import type { ListingRepository } from '../repositories/listing.repository';

const DURABLE = 'listings-media-summary';

/**
 * Keeps each listing's `media` summary in step with the media service: `media.media.changed`
 * carries the whole summary and the listing's media revision, so applying it is idempotent (an
 * event seen twice or after a newer one changes nothing). A change bumps the listing's version
 * and publishes `listings.listing.updated` through the outbox, so search and leads follow.
 */
export class MediaSummarySubscriber {
  private subscription?: Subscription;

  constructor(
    private readonly deps: {
      bus: Bus;
      listings: ListingRepository;
      outbox: Pick<OutboxRelay, 'kick'>;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.deps.bus.subscribe(
      ['media.media.changed'],
      { durable: DURABLE, concurrency: EVENT_CONCURRENCY, orderKey: (m) => m.payload.listingId },
      (m) => this.apply(m.payload, m.requestId),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }

  async apply(event: EventPayload<'media.media.changed'>, requestId?: string): Promise<void> {
    const now = this.deps.clock().toISOString();
    const updated = await this.deps.listings.setMediaSummary(
      event.accountId,
      event.listingId,
      (current) => mediaAfterChange(current.media, event),
      event.version,
      now,
      (next) =>
        outboxEntry(
          'listings.listing.updated',
          { accountId: event.accountId, listingId: next.id, version: next.version, occurredAt: now, listing: next },
          requestId,
        ),
    );
    if (!updated) {
      this.deps.log.debug(
        { listingId: event.listingId, mediaRevision: event.version, requestId },
        'media summary not applied: listing gone or summary not newer',
      );
      return;
    }
    this.deps.outbox.kick();
    this.deps.log.debug(
      { listingId: updated.id, version: updated.version, mediaRevision: event.version, requestId },
      'media summary applied',
    );
  }
}
