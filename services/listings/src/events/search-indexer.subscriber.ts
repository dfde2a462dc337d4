import {
  EVENT_CONCURRENCY,
  RetryLater,
  Unprocessable,
  type Bus,
  type BusMessage,
  type Subscription,
} from '@estate/bus';
import { SearchIndexRejected } from '@estate/search';
import type { Logger } from 'pino';
import type { ListingIndexRepository } from '../repositories/listing-index.repository';

const SUBJECTS = ['listings.listing.created', 'listings.listing.updated', 'listings.listing.deleted'] as const;
type ListingEvent = BusMessage<(typeof SUBJECTS)[number]>;

/**
 * Deliveries before an event is given up on. With the back-off capped at 30 s this is about a week,
 * the time the LISTINGS stream keeps events: an index outage shorter than that loses nothing.
 */
const MAX_DELIVER = 20_000;
const MAX_BACKOFF_MS = 30_000;

/**
 * Keeps the search index in step with the store from listing events. Events carry the whole
 * listing and its version, and the index refuses versions older than the one it holds, so
 * redeliveries and out-of-order arrivals change nothing.
 */
export class SearchIndexerSubscriber {
  private subscription?: Subscription;

  constructor(
    private readonly deps: {
      bus: Bus;
      index: ListingIndexRepository;
      log: Logger;
    },
  ) {}

  /**
   * Replicas feeding the same index share one consumer, so each event is indexed once; another
   * index (a second deployment, a test run) gets its own consumer and every event.
   */
  async start(): Promise<void> {
    this.subscription = await this.deps.bus.subscribe(
      SUBJECTS,
      {
        durable: `listings-search-${this.deps.index.name}`,
        maxDeliver: MAX_DELIVER,
        concurrency: EVENT_CONCURRENCY,
        orderKey: (m) => m.payload.listingId,
      },
      (m) => this.handle(m),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }

  async handle(message: ListingEvent): Promise<void> {
    try {
      switch (message.subject) {
        case 'listings.listing.created':
        case 'listings.listing.updated':
          await this.deps.index.upsert([{ accountId: message.payload.accountId, listing: message.payload.listing }]);
          return;
        case 'listings.listing.deleted':
          await this.deps.index.remove([{ id: message.payload.listingId, version: message.payload.version }]);
          return;
      }
    } catch (err) {
      if (err instanceof SearchIndexRejected)
        throw new Unprocessable(`search index refused listing ${message.payload.listingId}: ${err.message}`);
      // Unreachable or overloaded: the bus redelivers later, backing off while the outage lasts.
      throw new RetryLater(
        `search index: ${(err as Error).message}`,
        Math.min(1000 * 2 ** (message.deliveryCount - 1), MAX_BACKOFF_MS),
      );
    }
  }
}
