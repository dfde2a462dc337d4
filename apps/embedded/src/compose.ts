import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FsBlobStore } from '@estate/blobs/fs.blob-store';
import { MemoryBus } from '@estate/bus/memory.bus';
import { SqliteUnitOfWork } from '@estate/bus/sqlite.unit-of-work';
import { composeGateway, gatewayApp, type BootstrapResult } from '@estate/gateway';
import { composeLeads, leadsApp } from '@estate/leads';
import { composeListings, listingsApp } from '@estate/listings';
import { composeMedia, mediaApp, type MediaRuntime } from '@estate/media';
import { AppError, DependencyUnavailable } from '@estate/platform/errors';
import { createHttpApp } from '@estate/platform/http';
import { useCursorSecrets } from '@estate/platform/pagination';
import { secretKeyFile } from '@estate/platform/secrets';
import type { ListingIndex } from '@estate/search';
import { SqliteListingIndex } from '@estate/search/sqlite-listing.index';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { composeWebhooks, orNull, serviceIdentity, webhooksApp } from '@estate/webhooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { EmbeddedConfig } from './config';
import { importNedbFolder } from './nedb-import';

export interface EmbeddedProduct {
  app: FastifyInstance;
  /** The listings search index (the bench seeds it directly). */
  listingIndex: ListingIndex;
  /** What the first start created: the default account and the keys generated (to be shown once). */
  boot: BootstrapResult;
  close(): Promise<void>;
}

const EMBEDDED_KEY_CACHE_MS = 2_000;
/** Images a feed's photo sync lets wait for a render before it adds the next: the renderer never idles, memory stays flat. */
const FEED_PHOTOS_AWAITING_RENDER = 8;

/** The page cache of the files other than listings, KiB. */
const KEYED_FILE_CACHE_KIB = 4096;

/**
 * The embedded profile: the five services in one process, each with its own SQLite file in
 * DATA_DIR (documents, outbox, jobs; the listing search index in the listings file), talking over
 * the in-process bus, behind the gateway's edge on one HTTP server. SQLite's own locking lets the
 * CLI work on the same files while the server runs, and a killed process leaves nothing behind
 * that blocks the next start.
 */
export async function composeEmbedded(
  config: EmbeddedConfig,
  log: Logger,
  /** The listings search index; SQLite in the listings file unless given (the bench puts Elasticsearch behind the same edge). */
  options: { listingIndex?: ListingIndex } = {},
): Promise<EmbeddedProduct> {
  // Cursors stay valid across restarts: the secret that signs them lives in the data folder.
  useCursorSecrets([cursorSecret(config.dataDir)]);
  const bus = new MemoryBus(log.child({ component: 'bus' }));
  // The write-ahead logs are checkpointed on a worker thread, never inside a request's commit
  // (docs/decisions/0128-sqlite-checkpoints-off-the-event-loop.md).
  // The listings file, whose search index a search reads in ranges of thousands of pages, keeps SQLite's default page
  // cache; the others, read and written by key, a smaller one (docs/decisions/0138-sqlite-page-caches.md).
  const open = (service: string, cacheKiB?: number) =>
    SqliteDocumentStore.open(storeFile(config.dataDir, service), { backgroundCheckpoints: true, cacheKiB });
  const stores = {
    gateway: open('gateway', KEYED_FILE_CACHE_KIB),
    listings: open('listings'),
    media: open('media', KEYED_FILE_CACHE_KIB),
    leads: open('leads', KEYED_FILE_CACHE_KIB),
    webhooks: open('webhooks', KEYED_FILE_CACHE_KIB),
  };
  const ownIndex = options.listingIndex
    ? undefined
    : new SqliteListingIndex({ database: stores.listings.database, gate: stores.listings });
  const listingIndex = options.listingIndex ?? ownIndex!;
  // Each service's writes, their events and (listings) the search rows commit in one transaction of its file.
  const allUnits: SqliteUnitOfWork[] = [];
  const units = (store: SqliteDocumentStore) => {
    const made = new SqliteUnitOfWork({ store, bus, log });
    allUnits.push(made);
    return made;
  };
  // The RESO Web API reads galleries with a direct call here (over HTTP when distributed); media is composed below.
  const galleries: {
    current?: MediaRuntime['gallery'];
    uploads?: MediaRuntime['uploads'];
    renders?: MediaRuntime['renders'];
  } = {};
  const mediaComposed = () => {
    if (!galleries.current || !galleries.uploads || !galleries.renders)
      throw new DependencyUnavailable('media service', 'starting');
    return { gallery: galleries.current, uploads: galleries.uploads, renders: galleries.renders };
  };
  const listings = await composeListings({
    media: {
      forListings: (who, ids) => galleries.current?.forListings(who, ids) ?? Promise.resolve({}),
    },
    // Feeds' photos go through the media service's own upload session, as a one-file upload does.
    mediaWriter: {
      async addPhoto(ctx, listingId, photo) {
        // A feed brings photos faster than one process renders them: wait for the backlog, not pile it up in memory.
        await mediaComposed().renders.whenBelow(FEED_PHOTOS_AWAITING_RENDER);
        const session = await mediaComposed().uploads.begin(ctx, listingId);
        try {
          await session.addFile(Readable.from([photo.bytes]));
          if (photo.caption) session.setCaption(photo.caption);
          return (await session.commit())[0].id;
        } catch (err) {
          await session.abort().catch(() => undefined);
          throw err;
        }
      },
      async removeMedia(ctx, listingId, mediaId) {
        await mediaComposed()
          .gallery.remove(ctx, listingId, mediaId)
          .catch((err: unknown) => {
            if (!(err instanceof AppError && err.status === 404)) throw err;
          });
      },
      async reorder(ctx, listingId, mediaIds) {
        await mediaComposed().gallery.reorder(ctx, listingId, mediaIds);
      },
    },
    ...(config.publicBaseUrl ? { publicBaseUrl: config.publicBaseUrl } : {}),
    feeds: {
      secretKey: secretKeyFile(join(config.dataDir, 'feeds.key')),
      allowPrivateSources: config.feeds?.allowPrivateSources ?? false,
    },
    store: stores.listings,
    bus,
    log,
    index: listingIndex,
    units: units(stores.listings),
    requeueUnfinishedJobs: true,
    // The index in the listings file opens with it or not at all; one given from outside (the bench's
    // Elasticsearch) is an engine that may come up later.
    waitForSearchEngine: options.listingIndex !== undefined,
  });
  const media = await composeMedia({
    store: stores.media,
    bus,
    blobs: await FsBlobStore.open(join(config.dataDir, 'media', 'files')),
    // A listing whose event has not reached media yet is looked up directly here (over HTTP when distributed).
    listings: {
      find: async (who, listingId) => {
        try {
          return { accountId: who.accountId, version: (await listings.service.get(who, listingId)).version };
        } catch (err) {
          if (err instanceof AppError && (err.code === 'listing_not_found' || err.code === 'forbidden')) return null;
          throw err;
        }
      },
    },
    log,
    units: units(stores.media),
    queue: 'in-process',
  });
  galleries.current = media.gallery;
  galleries.uploads = media.uploads;
  galleries.renders = media.renders;
  const leads = await composeLeads({
    store: stores.leads,
    bus,
    log,
    // A listing a capture names before its event reached leads is read directly (over HTTP when distributed).
    listings: {
      find: async (who, listingId) => {
        try {
          return await listings.service.get(who, listingId);
        } catch (err) {
          if (err instanceof AppError && (err.code === 'listing_not_found' || err.code === 'forbidden')) return null;
          throw err;
        }
      },
    },
    units: units(stores.leads),
    // SQLite indexes no array members: `q` checks the tokens of the account's leads.
    searchTokenIndex: false,
  });
  const webhooks = await composeWebhooks({
    store: stores.webhooks,
    bus,
    log,
    secretKey: secretKeyFile(join(config.dataDir, 'webhooks.key')),
    // Resources the events do not carry whole are read with direct calls here (over HTTP when distributed).
    resources: {
      lead: (accountId, leadId) => orNull(() => leads.leads.get(serviceIdentity(accountId), leadId)),
      media: (accountId, listingId, mediaId) =>
        orNull(() => media.gallery.get(serviceIdentity(accountId), listingId, mediaId)),
    },
    options: config.webhooks,
    units: units(stores.webhooks),
    // SQLite units run in the order they start and commit together: a burst of events is stored with one commit.
    intakeConcurrency: 64,
    ...(config.publicBaseUrl ? { publicBaseUrl: config.publicBaseUrl } : {}),
  });
  const gateway = await composeGateway({
    store: stores.gateway,
    bus,
    log,
    // The gateway's job event stream reads jobs with a direct call here (over HTTP when distributed).
    jobs: { get: (who, jobId) => listings.bulk.get(who, jobId) },
    // An agent key's agent is read with a direct call too.
    agents: {
      state: async (who, agentId) => {
        const agent = await orNull(() => leads.agents.get(who, agentId));
        return agent ? { active: agent.active, version: agent.version } : null;
      },
    },
    // Live keys are trusted for 2 s, as on the distributed profile; a key the CLI revokes on the data folder is
    // refused at once, because a commit by another process drops the whole cache (decision 0095).
    keyCacheMs: EMBEDDED_KEY_CACHE_MS,
    keysChangedElsewhere: stores.gateway.changesByOthers(),
    rateLimitPerMinute: config.rateLimitPerMinute,
    anonymousRateLimitPerMinute: config.anonymousRateLimitPerMinute,
    keys: { adminKey: config.adminApiKey, platformKey: config.platformApiKey },
  });
  const runtimes = [gateway, listings, media, leads, webhooks];

  const app = await createHttpApp({
    service: 'embedded',
    logger: log,
    bodyLimit: 5 * 1024 * 1024,
    requestTimeoutMs: config.requestTimeoutMs,
    publicBaseUrl: config.publicBaseUrl,
    trustProxy: config.trustProxy,
    readiness: {
      bus: () => bus.ping(),
      ...listings.readiness,
      ...Object.fromEntries(Object.entries(stores).map(([name, s]) => [`store:${name}`, () => s.ping()])),
    },
    openapi: {
      title: 'Estate listings and leads API',
      description: 'Listings, media and lead management for brokerages, portals and CRMs.',
    },
  });
  // The gateway's edge covers every route registered beside it.
  await app.register(gatewayApp, { runtime: gateway });
  await app.register(listingsApp, { runtime: listings });
  await app.register(mediaApp, { runtime: media });
  await app.register(leadsApp, { runtime: leads });
  await app.register(webhooksApp, { runtime: webhooks });
  await app.ready();
  // A data folder of the previous version (NeDB files per service) is imported once, before anything starts.
  for (const [name, store] of Object.entries(stores)) await importNedbFolder(join(config.dataDir, name), store, log);
  for (const r of runtimes) await r.start();
  const boot = gateway.boot as BootstrapResult;

  return {
    app,
    boot,
    listingIndex,
    async close() {
      await app.close();
      for (const r of [...runtimes].reverse()) await r.stop();
      // Units the last events started commit and publish before the bus closes (none is left to the relay).
      await Promise.all(allUnits.map((u) => u.settled()));
      await bus.close();
      // Its count reader's thread stops; the file it shares is the listings store's, closed next.
      await ownIndex?.close();
      for (const s of Object.values(stores)) await s.close();
    },
  };
}

/** The data folder's cursor-signing secret, made on first use (readable by the owner only). */
function cursorSecret(dataDir: string): string {
  const file = join(dataDir, 'cursor-secret');
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return readFileSync(file, 'utf8').trim();
}

/** One SQLite file per service in the data folder. */
export const storeFile = (dataDir: string, service: string): string => join(dataDir, `${service}.sqlite`);
