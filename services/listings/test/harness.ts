import type { BusMessage } from '@estate/bus';
import { MemoryBus } from '@estate/bus/memory.bus';
import type { JobProgress } from '@estate/contracts/jobs';
import { MemoryListingIndex } from '@estate/search/memory-listing.index';
import type { DocumentStore } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { forwardedCall, identityFor, serveBehindGateway, unitsFor, type ForwardedCall } from '@estate/testing';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { listingsApp } from '../src/app';
import { composeListings, type ListingsRuntime } from '../src/compose';

/** The key feeds' credentials are encrypted under in these tests. */
export const FEEDS_TEST_KEY = 'feeds-test-key-0123456789-0123456789';

export const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export const alice = identityFor('acc_alice');
export const bob = identityFor('acc_bob');

/** The events the listings service publishes about listings and the end of bulk jobs. */
export const listingSubjects = [
  'listings.listing.created',
  'listings.listing.updated',
  'listings.listing.deleted',
  'listings.bulk-job.completed',
] as const;

/**
 * The listings service over HTTP with `app.inject()`, on the embedded adapters: SQLite in memory,
 * the in-process bus and the in-process search index, behind the gateway's signed identity.
 * `restart()` stands for the next process over the same store: a new bus and an empty index.
 */
export class ListingsHarness {
  readonly store: DocumentStore;
  /** Every listing event published, in order and across restarts (complete after `runtime.relay.flush()`). */
  readonly events: BusMessage<(typeof listingSubjects)[number]>[] = [];
  /** Every job progress notice, in order and across restarts. */
  readonly progress: JobProgress[] = [];
  app!: FastifyInstance;
  /** Whether feeds may read from http, private and loopback sources (FEEDS_ALLOW_PRIVATE_SOURCES). */
  allowPrivateSources = true;
  runtime!: ListingsRuntime;
  bus!: MemoryBus;

  private constructor(store: DocumentStore) {
    this.store = store;
  }

  /**
   * A started service; with `start: false` its runtime is composed but not started (no subscriber, no worker).
   * On NeDB in memory unless a store is given.
   */
  static async start(
    options: { start?: boolean; store?: DocumentStore; allowPrivateSources?: boolean } = {},
  ): Promise<ListingsHarness> {
    const harness = new ListingsHarness(options.store ?? SqliteDocumentStore.open(':memory:'));
    harness.allowPrivateSources = options.allowPrivateSources ?? true;
    await harness.boot(options.start ?? true);
    return harness;
  }

  async restart(options: { start?: boolean } = {}): Promise<void> {
    await this.close();
    await this.boot(options.start ?? true);
  }

  /** A request as the gateway forwards it for `who`; `null` sends no identity at all. */
  call: ForwardedCall = (...args) => forwardedCall(this.app)(...args);

  async close(): Promise<void> {
    await this.app.close();
    await this.runtime.stop();
    await this.bus.close();
  }

  private async boot(start: boolean): Promise<void> {
    this.bus = new MemoryBus(log);
    await this.bus.subscribe(listingSubjects, { durable: 'test' }, async (m) => void this.events.push(m));
    this.bus.listen('jobs.>', (data) => this.progress.push(data as JobProgress));
    this.runtime = await composeListings({
      store: this.store,
      bus: this.bus,
      units: unitsFor(this.store, this.bus, log),
      requeueUnfinishedJobs: true,
      waitForSearchEngine: false,
      log,
      index: new MemoryListingIndex(),
      feeds: {
        secretKey: FEEDS_TEST_KEY,
        allowPrivateSources: this.allowPrivateSources,
        pollMs: 100,
        leaseMs: 2000,
      },
    });
    this.app = await serveBehindGateway({ service: 'listings', log, plugin: listingsApp, runtime: this.runtime });
    if (start) await this.runtime.start();
  }
}
