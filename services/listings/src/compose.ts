import { serviceLogger } from '@estate/platform/logging';
import { OutboxRelay, type Bus, type UnitOfWork } from '@estate/bus';
import { waitFor } from '@estate/platform/lifecycle';
import { SearchIndexUnavailable, type ListingIndex } from '@estate/search';
import type { DocumentStore } from '@estate/store';
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
import type { MediaReader, MediaWriter } from './clients/media.client';
import { FeedPhotosRepository } from './repositories/feed-photos.repository';
import { ResoService } from './reso.service';
import { SearchService } from './search.service';
import { BulkWorker } from './workers/bulk.worker';
import { FeedRunWorker } from './workers/feed-run.worker';
import { FeedSourceClient } from './clients/feed-source.client';
import { FEED_SECRETS_KEY, FeedsService } from './feeds.service';
import { FeedRepository } from './repositories/feed.repository';
import { targetRefusal } from '@estate/platform/net';
import { SecretBox } from '@estate/platform/secrets';

export interface ListingsDeps {
  store: DocumentStore;
  bus: Bus;
  log: Logger;
  /** The search index adapter (Elasticsearch, or the in-process one). */
  index: ListingIndex;
  clock?: () => Date;
  /**
   * How a write and its events (and a listing's search row) commit, chosen by the profile: one transaction where
   * the store has them and the index lives in it (SQLite), else one atomic document write with its outbox
   * (docs/decisions/0126-unit-of-work.md).
   */
  units: UnitOfWork;
  /** Whether the bulk queue dies with the process (the in-process bus), so start re-queues unfinished jobs. */
  requeueUnfinishedJobs: boolean;
  /**
   * Whether the search index is an engine of its own that may come up after this process (Elasticsearch): start
   * then waits for it. An index that lives in the process (SQLite, memory) and cannot open will not get better by
   * waiting: start fails.
   */
  waitForSearchEngine: boolean;
  /** The media of listings, for the RESO Web API (over HTTP when distributed, a direct call embedded); none without it. */
  media?: MediaReader;
  /** Galleries feeds write their photos to, as uploads do (embedded: a direct call); feeds sync no photos without it. */
  mediaWriter?: MediaWriter;
  /** Where clients reach the API (PUBLIC_BASE_URL): RESO links and media URLs are absolute with it. */
  publicBaseUrl?: string;
  /** Feeds: the key their stored credentials are encrypted under, and whether sources may be private hosts. */
  feeds: { secretKey: string; allowPrivateSources: boolean; pollMs?: number; leaseMs?: number };
}

export interface ListingsRuntime {
  service: ListingsService;
  search: SearchService;
  reso: ResoService;
  publicBaseUrl?: string;
  upserts: ListingUpsertService;
  bulk: BulkService;
  bulkWorker: BulkWorker;
  feeds: FeedsService;
  feedRuns: FeedRunWorker;
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
  const relay = new OutboxRelay({ bus: deps.bus, log, units: deps.units });
  relay.watch(LISTINGS_COLLECTION, listings.collection);
  relay.watch(BULK_JOBS_COLLECTION, jobs.collection);

  const service = new ListingsService({
    listings,
    units: deps.units,
    clock,
    log,
    search: index,
  });
  const search = new SearchService({ index });
  const reso = new ResoService({ index, media: deps.media ?? { forListings: async () => ({}) }, clock });
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
    units: deps.units,
  });
  const feedRepository = await FeedRepository.open(deps.store);
  const source = new FeedSourceClient({ allowPrivateSources: deps.feeds.allowPrivateSources });
  const runs: { worker?: FeedRunWorker } = {};
  const feeds = new FeedsService({
    feeds: feedRepository,
    jobs,
    secrets: new SecretBox(deps.feeds.secretKey, FEED_SECRETS_KEY),
    sourceRefusal: (url) => targetRefusal(url, deps.feeds.allowPrivateSources),
    runs: { kick: () => runs.worker?.kick() },
    clock,
  });
  const feedRuns = (runs.worker = new FeedRunWorker({
    jobs,
    feeds: feedRepository,
    secrets: feeds,
    upserts,
    listings: service,
    feedListings: listings,
    schedule: feeds,
    ...(deps.mediaWriter && deps.media
      ? {
          photos: {
            synced: await FeedPhotosRepository.open(deps.store),
            writer: deps.mediaWriter,
            reader: deps.media,
          },
        }
      : {}),
    source,
    bus: deps.bus,
    outbox: relay,
    clock,
    log,
    commitPage: (apply) => deps.units.run(() => apply()),
    ...(deps.feeds.pollMs ? { pollMs: deps.feeds.pollMs } : {}),
    ...(deps.feeds.leaseMs ? { leaseMs: deps.feeds.leaseMs } : {}),
  }));
  const indexer = new SearchIndexerSubscriber({ bus: deps.bus, index, log });
  const mediaSummary = new MediaSummarySubscriber({ bus: deps.bus, listings, outbox: relay, clock, log });
  return {
    service,
    search,
    reso,
    ...(deps.publicBaseUrl ? { publicBaseUrl: deps.publicBaseUrl } : {}),
    upserts,
    bulk,
    bulkWorker,
    feeds,
    feedRuns,
    relay,
    index: deps.index,
    readiness: { search: () => index.ping() },
    async start() {
      // A search engine may come up after this process: wait for it rather than exit.
      const { created } = await waitFor('search index', () => index.open(), log, {
        isPermanent: (err) => !deps.waitForSearchEngine || !(err instanceof SearchIndexUnavailable),
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
      if (deps.requeueUnfinishedJobs) await bulkWorker.requeueUnfinished();
      feedRuns.start();
    },
    async stop() {
      await feedRuns.stop();
      source.close();
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
