import { OutboxRelay, type Bus } from '@estate/bus';
import { type ListingIndex } from '@estate/search';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { BULK_JOBS_COLLECTION, BulkJobRepository } from './bulk/bulk-job.repository';
import { BulkService } from './bulk/bulk.service';
import { BulkWorker } from './bulk/bulk.worker';
import { MediaSummarySubscriber } from './events/media-summary.subscriber';
import { ListingsService } from './listings.service';
import { LISTINGS_COLLECTION, ListingRepository } from './repositories/listing.repository';
import { SearchIndexer } from './search/search-indexer.subscriber';
import { fillIndexFromStore } from './search/search-reindex';

export interface ListingsRuntime {
  service: ListingsService;
  bulk: BulkService;
  bulkWorker: BulkWorker;
  relay: OutboxRelay;
  index: ListingIndex;
  /** Dependencies `/health/ready` checks, beyond the store and the bus. */
  readiness: Record<string, () => Promise<void>>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Wires the listings service over whichever adapters the profile chose. An empty search index is
 * filled from the store at start.
 */
export async function composeListings(deps: { store: DocumentStore; bus: Bus; log: Logger; clock?: () => Date; index: ListingIndex }): Promise<ListingsRuntime> {
  const log = deps.log.child({ service: 'listings' });
  const listings = await ListingRepository.open(deps.store);
  const relay = new OutboxRelay({ bus: deps.bus, log });
  relay.watch(LISTINGS_COLLECTION, listings.collection);
  const index = deps.index;
  const indexer = new SearchIndexer({ bus: deps.bus, index, log });
  const service = new ListingsService({ listings, index, outbox: relay, clock: deps.clock ?? (() => new Date()), log });
  const clock = deps.clock ?? (() => new Date());
  const jobs = await BulkJobRepository.open(deps.store);
  relay.watch(BULK_JOBS_COLLECTION, jobs.collection);
  const bulk = new BulkService({ jobs, outbox: relay, clock, log });
  const bulkWorker = new BulkWorker({ jobs, listings: service, bus: deps.bus, clock, log });
  const mediaSummary = new MediaSummarySubscriber({ bus: deps.bus, listings, outbox: relay, clock, log });
  return {
    service,
    bulk,
    bulkWorker,
    relay,
    index,
    readiness: { search: () => index.ping() },
    async start() {
      const { created } = await index.open();
      // Subscribed before filling: changes made meanwhile reach the index too, and versions settle the order.
      await indexer.start();
      if (created) log.info({ listings: await fillIndexFromStore(listings, index), index: index.kind }, 'search index filled from the store');
      // Subscribed before the relay's first sweep, so queued jobs it publishes have a taker.
      await bulkWorker.start();
      await mediaSummary.start();
      relay.start();
      // The in-process queue died with the last process; JetStream keeps its jobs by itself.
      if (deps.bus.kind === 'memory') await bulkWorker.requeueUnfinished();
    },
    async stop() {
      await bulkWorker.stop();
      await mediaSummary.stop();
      await relay.stop();
      await indexer.stop();
      await index.close();
    },
  };
}
