import { serviceLogger } from '@estate/platform/logging';
import { OutboxRelay, type Bus } from '@estate/bus';
import { waitFor } from '@estate/platform/lifecycle';
import { SearchIndexUnavailable, type ListingIndex } from '@estate/search';
import type { DocumentStore, Transaction } from '@estate/store';
import type { Logger } from 'pino';
import { BulkService } from './bulk.service';
import { MediaSummarySubscriber } from './events/media-summary.subscriber';
import { SearchIndexerSubscriber } from './events/search-indexer.subscriber';
import { ListingUpsertService } from './listing-upsert.service';
import { ListingsService } from './listings.service';
import { ReindexService, type ReindexReport } from './reindex.service';
import { BULK_JOBS_COLLECTION, BulkJobRepository } from './repositories/bulk-job.repository';
import { ListingIndexRepository } from './repositories/listing-index.repository';
import { LISTINGS_COLLECTION, ListingRepository } from './repositories/listing.repository';
import { SearchService } from './search.service';
import { BulkWorker } from './workers/bulk.worker';

export interface ListingsDeps {
  store: DocumentStore;
  bus: Bus;
  log: Logger;
  /** The search index adapter (Elasticsearch, or the in-process one). */
  index: ListingIndex;
  clock?: () => Date;
  /**
   * The store's transaction, where it has one (SQLite): bulk jobs then commit many items at once, and the outbox relay clears what it published in one commit.
   * With `indexInStore`, the index lives in the same database and joins it: listing writes change
   * the index in their own commit.
   */
  transaction?: Transaction;
  indexInStore?: boolean;
}

export interface ListingsRuntime {
  service: ListingsService;
  search: SearchService;
  upserts: ListingUpsertService;
  bulk: BulkService;
  bulkWorker: BulkWorker;
  relay: OutboxRelay;
  /** The search index adapter this runtime feeds. */
  index: ListingIndex;
  /** Dependencies `/health/ready` checks, beyond the store and the bus. */
  readiness: Record<string, () => Promise<void>>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Wires the listings service over the adapters given. An empty search index is filled from the
 * store at start.
 */
export async function composeListings(deps: ListingsDeps): Promise<ListingsRuntime> {
  const log = serviceLogger(deps.log, 'listings');
  const clock = deps.clock ?? (() => new Date());
  const listings = await ListingRepository.open(deps.store);
  const jobs = await BulkJobRepository.open(deps.store);
  const index = new ListingIndexRepository(deps.index);
  const relay = new OutboxRelay({ bus: deps.bus, log, transaction: deps.transaction });
  relay.watch(LISTINGS_COLLECTION, listings.collection);
  relay.watch(BULK_JOBS_COLLECTION, jobs.collection);

  const service = new ListingsService({
    listings,
    outbox: relay,
    clock,
    log,
    search: { index, transaction: deps.indexInStore ? deps.transaction : undefined },
  });
  const search = new SearchService({ index });
  const reindex = new ReindexService({ listings, index });
  const upserts = new ListingUpsertService({ writes: service, listings });
  const bulk = new BulkService({ jobs, outbox: relay, clock, log });
  const bulkWorker = new BulkWorker({
    jobs,
    upserts,
    bus: deps.bus,
    clock,
    log,
    outbox: relay,
    transaction: deps.transaction,
  });
  const indexer = new SearchIndexerSubscriber({ bus: deps.bus, index, log });
  const mediaSummary = new MediaSummarySubscriber({ bus: deps.bus, listings, outbox: relay, clock, log });
  return {
    service,
    search,
    upserts,
    bulk,
    bulkWorker,
    relay,
    index: deps.index,
    readiness: { search: () => index.ping() },
    async start() {
      // A search engine may come up after this process: wait for it rather than exit. (An in-process index
      // that cannot open will not get better by waiting.)
      const { created } = await waitFor('search index', () => index.open(), log, {
        isPermanent: (err) => index.kind !== 'elasticsearch' || !(err instanceof SearchIndexUnavailable),
      });
      // Subscribed before filling: changes made meanwhile reach the index too, and versions settle the order.
      await indexer.start();
      if (created)
        log.info({ listings: await reindex.fill(), index: index.kind }, 'search index filled from the store');
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

/** The reindex command: rebuilds `index` (opened here) from the listings of `store`, the service running or not. */
export async function reindexListings(store: DocumentStore, index: ListingIndex): Promise<ReindexReport> {
  const search = new ListingIndexRepository(index);
  await search.open();
  return new ReindexService({ listings: await ListingRepository.open(store), index: search }).rebuild();
}
