import { randomUUID } from 'node:crypto';
import type { Job } from '@estate/contracts/jobs';
import type { DocumentCollection, DocumentStore, StoredDoc } from '@estate/store';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { describeWithEngines, eventually, ResoTestSource, type SourceRecord } from '@estate/testing';
import { alice, bob, ListingsHarness, log } from './harness';

const FINAL = ['succeeded', 'partially_failed', 'failed'];

/** A source record: `n` gives its key and price, `t` its ModificationTimestamp (seconds into 2026). */
const record = (n: number, t: number, extra: Record<string, unknown> = {}): SourceRecord => ({
  ListingKey: `K${String(n).padStart(4, '0')}`,
  ModificationTimestamp: new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString(),
  StandardStatus: 'Active',
  PropertyType: 'Residential',
  ListPrice: 100_000 + n,
  UnparsedAddress: `${n} Main St`,
  City: 'Austin',
  StateOrProvince: 'TX',
  PostalCode: '78701',
  Country: 'US',
  BedroomsTotal: 3,
  ...extra,
});

/**
 * A store that "dies" like a killed process: once `dieAt` listing inserts have been asked for, that insert and every
 * later call on any collection fail, so nothing more is written through it.
 */
class DyingStore implements DocumentStore {
  dead = false;
  private inserts = 0;
  constructor(
    private readonly inner: DocumentStore,
    private readonly dieAt: number,
  ) {}
  get kind() {
    return this.inner.kind;
  }
  async collection<T extends StoredDoc>(name: string, indexes?: Parameters<DocumentStore['collection']>[1]) {
    const col = await this.inner.collection<T>(name, indexes);
    const guard =
      <A extends unknown[], R>(op: string, fn: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        if (name === 'listings' && op === 'insertOne' && ++this.inserts >= this.dieAt) this.dead = true;
        if (this.dead) throw new Error('the process died');
        return fn(...args);
      };
    const wrapped: DocumentCollection<T> = {
      insertOne: guard('insertOne', (doc: T) => col.insertOne(doc)),
      findOne: guard('findOne', (f) => col.findOne(f)),
      find: guard('find', (f, o) => col.find(f, o)),
      count: guard('count', (f) => col.count(f)),
      updateOne: guard('updateOne', (f, u) => col.updateOne(f, u)),
      updateMany: guard('updateMany', (f, u) => col.updateMany(f, u)),
      deleteOne: guard('deleteOne', (f) => col.deleteOne(f)),
      deleteMany: guard('deleteMany', (f) => col.deleteMany(f)),
    };
    return wrapped;
  }
  ping() {
    return this.dead ? Promise.reject(new Error('the process died')) : this.inner.ping();
  }
  async close() {}
}

/** A store of its own for one test, and how to drop it. */
type OpenStore = () => Promise<{ store: DocumentStore; drop(): Promise<void> }>;

const sqlite: OpenStore = async () => {
  const store = SqliteDocumentStore.open(':memory:');
  return { store, drop: () => store.close() };
};
const mongo =
  (url: string): OpenStore =>
  async () => {
    const store = await MongoDocumentStore.connect(url, { dbName: `feeds_${randomUUID().slice(0, 8)}`, log });
    return {
      store,
      async drop() {
        await store.dropDatabase();
        await store.close();
      },
    };
  };

describe('feed sync from a RESO Web API source (listings service, SQLite)', () => feedSuite(sqlite));
describeWithEngines('feed sync from a RESO Web API source (listings service, MongoDB wire)', ['MONGODB_URL'], (urls) =>
  feedSuite(mongo(urls.MONGODB_URL)),
);

function feedSuite(openStore: OpenStore) {
  let h: ListingsHarness;
  let source: ResoTestSource;
  let opened: Awaited<ReturnType<OpenStore>>;
  const call: ListingsHarness['call'] = (...args) => h.call(...args);

  beforeEach(async () => {
    opened = await openStore();
    h = await ListingsHarness.start({ store: opened.store });
    source = await new ResoTestSource().start();
  });
  afterEach(async () => {
    await h.close();
    await source.close();
    await opened.drop();
  });

  const createFeed = async (extra: Record<string, unknown> = {}) => {
    const res = await call(alice, 'POST', '/v1/feeds', {
      name: 'Test MLS',
      serviceRoot: source.url,
      auth: { type: 'bearer', token: 'source-token' },
      originatingSystemName: 'test-mls',
      budget: { requestsPerSecond: 100 },
      pageSize: 3,
      ...extra,
    });
    expect(res.statusCode).toBe(201);
    return res.json() as { id: string };
  };
  const run = async (feedId: string, query = ''): Promise<Job> => {
    const res = await call(alice, 'POST', `/v1/feeds/${feedId}/runs${query}`);
    expect(res.statusCode).toBe(202);
    const jobId = (res.json() as Job).id;
    return eventually(
      async () => {
        const job = (await call(alice, 'GET', `/v1/jobs/${jobId}`)).json() as Job;
        if (!FINAL.includes(job.state)) throw new Error(`run still ${job.state}`);
        return job;
      },
      { timeoutMs: 20_000, intervalMs: 20 },
    );
  };
  const synced = async () => {
    await h.runtime.relay.flush();
    const res = await call(alice, 'GET', '/v1/listings?limit=100');
    return (
      res.json() as {
        items: Array<{ externalId: string; source: string; pricing: { listPrice: number }; version: number }>;
      }
    ).items;
  };

  it('keeps secrets out of answers, refuses other accounts and agents, and takes merge patches', async () => {
    const feed = await createFeed();
    const got = await call(alice, 'GET', `/v1/feeds/${feed.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).not.toContain('source-token');
    expect(got.json()).toMatchObject({ auth: { type: 'bearer' }, originatingSystemName: 'test-mls', cursor: null });
    expect((await call(bob, 'GET', `/v1/feeds/${feed.id}`)).statusCode).toBe(404);
    expect((await call(bob, 'POST', `/v1/feeds/${feed.id}/runs`)).statusCode).toBe(404);
    const patched = await call(alice, 'PATCH', `/v1/feeds/${feed.id}`, { enabled: false });
    expect(patched.json()).toMatchObject({ enabled: false, version: 2 });
    expect((await call(alice, 'POST', `/v1/feeds/${feed.id}/runs`)).json()).toMatchObject({ code: 'feed_disabled' });
    expect((await call(alice, 'GET', '/v1/feeds')).json()).toMatchObject({ total: 1 });
    expect((await call(alice, 'DELETE', `/v1/feeds/${feed.id}`)).json()).toEqual({ id: feed.id, deleted: true });
    expect((await call(alice, 'GET', `/v1/feeds/${feed.id}`)).statusCode).toBe(404);
  });

  it('walks the whole feed, records on a timestamp tie across pages included, through expiring nextLinks and 429s', async () => {
    // Ten records, pages of three: records 2..5 share one timestamp across the first page boundary.
    source.put(
      ...[0, 1].map((n) => record(n, n)),
      ...[2, 3, 4, 5].map((n) => record(n, 10)),
      ...[6, 7, 8, 9].map((n) => record(n, 20 + n)),
    );
    source.faults = { nextLinksValidFor: 1, tooManyRequests: 2 };
    const feed = await createFeed();
    const job = await run(feed.id);
    expect(job).toMatchObject({ type: 'feed_sync', feedId: feed.id, state: 'succeeded' });
    expect(job.ledger).toMatchObject({ fetched: 10, created: 10, updated: 0, unchanged: 0, failed: 0, retries: 2 });
    expect(job.ledger!.restarts).toBeGreaterThan(0);
    expect(job.ledger!.cursorAfter).toEqual({
      modificationTimestamp: record(9, 29).ModificationTimestamp,
      listingKey: 'K0009',
    });
    const listings = await synced();
    expect(listings.map((l) => l.externalId).sort()).toEqual([...Array(10).keys()].map((n) => record(n, 0).ListingKey));
    expect(listings.every((l) => l.source === 'test-mls')).toBe(true);
    expect((await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json().cursor).toEqual(job.ledger!.cursorAfter);
  });

  it('later runs take changes since the cursor with an overlap, write only what changed, and report bad records', async () => {
    source.put(record(1, 1), record(2, 2), record(3, 3));
    const feed = await createFeed();
    await run(feed.id);
    const before = await synced();
    source.put(record(2, 100, { ListPrice: 250_000 }), record(4, 101, { ListPrice: -5 }), record(5, 102));
    // Seen again inside the overlap window, unchanged: not written.
    source.put(record(3, 3));
    const dry = await run(feed.id, '?dryRun=true');
    expect(dry.ledger).toMatchObject({ dryRun: true, created: 1, updated: 1, failed: 1 });
    expect(dry.ledger!.preview).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ listingKey: 'K0002', action: 'update', fields: ['pricing.listPrice'] }),
      ]),
    );
    expect(await synced()).toEqual(before);
    const job = await run(feed.id);
    expect(job.state).toBe('partially_failed');
    expect(job.ledger).toMatchObject({ created: 1, updated: 1, failed: 1 });
    expect(job.errors).toEqual([expect.objectContaining({ externalId: 'K0004', path: 'pricing.listPrice' })]);
    const after = await synced();
    const byKey = new Map(after.map((l) => [l.externalId, l]));
    expect(byKey.get('K0002')).toMatchObject({ pricing: { listPrice: 250_000 }, version: 2 });
    expect(byKey.get('K0001')!.version).toBe(1);
    expect(byKey.get('K0003')!.version).toBe(1);
    const again = await run(feed.id);
    expect(again.ledger).toMatchObject({ created: 0, updated: 0, failed: 1 });
  });

  it('a feed that suddenly answers nothing changes nothing, and a failing source fails the run with the cursor kept', async () => {
    source.put(record(1, 1), record(2, 2));
    const feed = await createFeed();
    const first = await run(feed.id);
    source.faults = { empty: true };
    const empty = await run(feed.id);
    expect(empty).toMatchObject({ state: 'succeeded', ledger: { fetched: 0, cursorAfter: first.ledger!.cursorAfter } });
    expect(await synced()).toHaveLength(2);
    source.faults = { unavailable: 100 };
    const failed = await run(feed.id);
    expect(failed.state).toBe('failed');
    expect(failed.ledger!.stopReason).toMatch(/503/);
    expect((await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json().cursor).toEqual(first.ledger!.cursorAfter);
  });

  /** A listing as GET /v1/listings/:id answers it, by its feed key. */
  const byKey = async (key: string) => {
    const listings = await opened.store.collection<{ id: string; externalId?: string; _deleted?: boolean }>('listings');
    const doc = await listings.findOne({ externalId: key });
    if (!doc || doc._deleted) return null;
    const res = await call(alice, 'GET', `/v1/listings/${doc.id}`);
    return res.statusCode === 200 ? (res.json() as { id: string; version: number; sourceMissing?: unknown }) : null;
  };
  /** The feed keys search shows, once the index has caught up with the events. */
  const searchable = async () => {
    await h.runtime.relay.flush();
    return (await synced()).map((l) => l.externalId).sort();
  };
  const keys = (...ns: number[]) => ns.map((n) => record(n, 0).ListingKey);
  const ten = () => [...Array(10).keys()].map((n) => record(n, n));

  it('removals: a listing that left the feed is quarantined by the key pull, shown again when back, deleted after quarantineRuns', async () => {
    source.put(...ten());
    const feed = await createFeed({ removals: { quarantineRuns: 2, maxRemovedPercent: 25 } });
    const first = await run(feed.id);
    expect(first.ledger).toMatchObject({ created: 10, reconcile: false, keys: null, quarantined: 0 });
    source.records.delete('K0003');
    source.records.delete('K0007');
    // A run without reconcile takes out nothing.
    expect((await run(feed.id)).ledger).toMatchObject({ quarantined: 0, removed: 0, keys: null });

    const dry = await run(feed.id, '?reconcile=true&dryRun=true');
    expect(dry.ledger).toMatchObject({ reconcile: true, keys: 8, quarantined: 2, removed: 0 });
    expect((await byKey('K0003'))!.sourceMissing).toBeNull();

    const quarantine = await run(feed.id, '?reconcile=true');
    expect(quarantine.state).toBe('succeeded');
    expect(quarantine.ledger).toMatchObject({ keys: 8, quarantined: 2, restored: 0, removed: 0, stopReason: null });
    // A key pull asks for keys only.
    expect(source.requests.filter((r) => r.includes('%24select=ListingKey')).length).toBeGreaterThan(0);
    expect(await byKey('K0007')).toMatchObject({
      sourceMissing: { feedId: feed.id, runs: 1, runId: quarantine.id },
    });
    await eventually(async () => expect(await searchable()).toEqual(keys(0, 1, 2, 4, 5, 6, 8, 9)), {
      timeoutMs: 10_000,
    });
    expect((await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json().reconciledAt).toEqual(expect.any(String));

    // K0003 is back at the source: its record is written again (shown), the next key pull deletes K0007.
    source.put(record(3, 3));
    const second = await run(feed.id, '?reconcile=true');
    expect(second.ledger).toMatchObject({ keys: 9, quarantined: 0, removed: 1 });
    expect(await byKey('K0007')).toBeNull();
    expect((await byKey('K0003'))!.sourceMissing).toBeNull();
    await eventually(async () => expect(await searchable()).toEqual(keys(0, 1, 2, 3, 4, 5, 6, 8, 9)), {
      timeoutMs: 10_000,
    });
  });

  it('removals: a record the source flags as not for display (MlgCanView false) is never created, quarantines the listing we have, and is deleted by later key pulls although its key is still there', async () => {
    // The source keeps flagged records in the feed (and in its key pull), as MLS Grid does.
    source.put(...ten().map((r) => ({ ...r, MlgCanView: true })), record(10, 10, { MlgCanView: false }));
    // The run that flags it counts as the first of the three that find it gone.
    const feed = await createFeed({ removals: { quarantineRuns: 3, maxRemovedPercent: 5 } });
    const first = await run(feed.id);
    expect(first.ledger).toMatchObject({ fetched: 11, created: 10, hidden: 1, quarantined: 0, failed: 0 });
    expect(await byKey('K0010')).toBeNull();

    // K0004 is flagged at the source (a change like any other): its listing is hidden, its fields are not written.
    source.put(record(4, 20, { MlgCanView: false, ListPrice: 1 }));
    const dry = await run(feed.id, '?dryRun=true');
    expect(dry.ledger).toMatchObject({ hidden: 2, quarantined: 1, updated: 0 });
    expect((await byKey('K0004'))!.sourceMissing).toBeNull();
    const hide = await run(feed.id);
    expect(hide.ledger).toMatchObject({ hidden: 2, quarantined: 1, created: 0, updated: 0 });
    expect(await byKey('K0004')).toMatchObject({
      version: 2,
      pricing: { listPrice: 100_004 },
      sourceMissing: { feedId: feed.id, runs: 1, runId: hide.id, reason: 'hidden' },
    });
    await eventually(async () => expect(await searchable()).toEqual(keys(0, 1, 2, 3, 5, 6, 7, 8, 9)), {
      timeoutMs: 10_000,
    });
    // Seen flagged again: nothing more is written.
    expect((await run(feed.id)).ledger).toMatchObject({ hidden: 2, quarantined: 0 });
    expect((await byKey('K0004'))!.version).toBe(2);

    // The key pull still lists K0004 (and K0010): a flagged listing is not shown again by it, nor does it count
    // towards the breaker (one of ten is over 5%); the next key pull deletes it.
    const counted = await run(feed.id, '?reconcile=true');
    expect(counted.state).toBe('succeeded');
    expect(counted.ledger).toMatchObject({ keys: 11, restored: 0, removed: 0, stopReason: null });
    expect(await byKey('K0004')).toMatchObject({ sourceMissing: { runs: 2, reason: 'hidden' } });
    const removed = await run(feed.id, '?reconcile=true');
    expect(removed.ledger).toMatchObject({ keys: 11, removed: 1 });
    expect(await byKey('K0004')).toBeNull();

    // A flagged record shown again at the source comes back as a listing of the feed; K0004, seen again flagged in
    // the overlap window, stays gone.
    source.put(record(10, 30, { MlgCanView: true }));
    expect((await run(feed.id)).ledger).toMatchObject({ created: 1, hidden: 1, quarantined: 0 });
    expect(await byKey('K0010')).toMatchObject({ sourceMissing: null });
    expect(await byKey('K0004')).toBeNull();
  });

  it("removals: the source's EntityEvent names a deleted record: the next run quarantines its listing without a key pull; a source without EntityEvent is asked once a day", async () => {
    source.entityEvents = true;
    source.put(...ten());
    const feed = await createFeed({ removals: { quarantineRuns: 2, maxRemovedPercent: 25 } });
    const first = await run(feed.id);
    // Following starts at the newest event, asked before the first walk: what came before is in the walk.
    expect(source.requests[0]).toMatch(/^\/odata\/EntityEvent\?.*desc/);
    expect(first.ledger).toMatchObject({ created: 10, entityEvents: 0, quarantined: 0 });

    // At the source: K0003 is deleted, K0005 changes, a record we never had comes and goes.
    source.remove('K0003');
    source.put(record(5, 50, { ListPrice: 555_555 }));
    source.put(record(42, 51));
    source.remove('K0042');
    const second = await run(feed.id);
    expect(second.state).toBe('succeeded');
    expect(second.ledger).toMatchObject({ entityEvents: 4, quarantined: 1, updated: 1, created: 0, keys: null });
    expect(await byKey('K0003')).toMatchObject({
      sourceMissing: { feedId: feed.id, runs: 1, runId: second.id, reason: 'missing' },
    });
    expect(await byKey('K0042')).toBeNull();
    await eventually(async () => expect(await searchable()).toEqual(keys(0, 1, 2, 4, 5, 6, 7, 8, 9)), {
      timeoutMs: 10_000,
    });
    // The events read are not read again; the next key pull deletes the listing.
    expect((await run(feed.id)).ledger).toMatchObject({ entityEvents: 0, quarantined: 0 });
    const pulled = await run(feed.id, '?reconcile=true');
    expect(pulled.ledger).toMatchObject({ keys: 9, removed: 1, quarantined: 0 });
    expect(await byKey('K0003')).toBeNull();

    // A source without EntityEvent: asked once (404), then not again within the day.
    source.entityEvents = false;
    const plain = await createFeed({ name: 'Plain', originatingSystemName: 'plain-mls' });
    source.requests.length = 0;
    expect((await run(plain.id)).ledger).toMatchObject({ created: 9, entityEvents: null });
    expect((await run(plain.id)).ledger).toMatchObject({ entityEvents: null });
    expect(source.requests.filter((r) => r.startsWith('/odata/EntityEvent'))).toHaveLength(1);
  });

  it('a run asked for as the last one releases the feed is started, not refused (the release lands between our two tries)', async () => {
    source.put(...ten());
    const feed = await createFeed();
    const first = await run(feed.id);
    expect(first.state).toBe('succeeded');
    // The feed as the ending run leaves it for a moment: the run reads as ended, the feed still names it.
    type Deps = {
      feeds: {
        takeRun(a: string, id: string, run: string): Promise<unknown>;
        releaseRun(id: string, run: string): Promise<void>;
      };
      jobs: { load(id: string): Promise<unknown> };
    };
    const deps = (h.runtime.feeds as unknown as { deps: Deps }).deps;
    expect(await deps.feeds.takeRun(alice.accountId, feed.id, first.id)).toBeTruthy();
    const load = deps.jobs.load.bind(deps.jobs);
    deps.jobs.load = async (id: string) => {
      // The release lands after our first try found the feed held, before the second.
      await deps.feeds.releaseRun(feed.id, first.id);
      return load(id);
    };
    try {
      const second = await run(feed.id);
      expect(second.state).toBe('succeeded');
    } finally {
      deps.jobs.load = load;
    }
  });

  it('removals: a feed that suddenly answers nothing trips the circuit breaker and removes nothing', async () => {
    source.put(...ten());
    const feed = await createFeed();
    await run(feed.id);
    source.faults = { empty: true };
    const job = await run(feed.id, '?reconcile=true');
    expect(job.state).toBe('failed');
    expect(job.ledger).toMatchObject({ keys: 0, quarantined: 0, removed: 0 });
    expect(job.ledger!.stopReason).toMatch(/10 of the feed's 10 listings missing .*maxRemovedPercent/);
    // One of ten gone is 10%, over the default 5%: nothing either.
    source.faults = {};
    source.records.delete('K0004');
    const one = await run(feed.id, '?reconcile=true');
    expect(one.ledger).toMatchObject({ keys: 9, quarantined: 0, removed: 0 });
    expect(one.ledger!.stopReason).toMatch(/maxRemovedPercent \(5%\)/);
    for (const key of keys(...[...Array(10).keys()])) expect((await byKey(key))!.sourceMissing).toBeNull();
    expect(await searchable()).toEqual(keys(...[...Array(10).keys()]));
  });

  it('removals: an incomplete key pull (a failed page, an expired nextLink, a spent budget) quarantines nothing', async () => {
    source.put(...ten());
    const feed = await createFeed({ removals: { quarantineRuns: 1, maxRemovedPercent: 100 } });
    await run(feed.id);
    source.records.delete('K0001');
    source.records.delete('K0008');
    for (const fault of ['page', 'nextLink'] as const) {
      source.faults = { keyPull: fault };
      const job = await run(feed.id, '?reconcile=true');
      expect({ fault, state: job.state }).toEqual({ fault, state: 'partially_failed' });
      expect(job.ledger).toMatchObject({ keys: null, quarantined: 0, removed: 0 });
      expect(job.ledger!.stopReason).toMatch(/key pull did not reach the end .*nothing was quarantined or removed/);
    }
    // The walk of the changes takes three requests (eight records, pages of three), the key pull three more: a budget
    // that allows the walk and one key page stops the pull.
    source.faults = {};
    const used = source.requests.length;
    const patched = await call(alice, 'PATCH', `/v1/feeds/${feed.id}`, {
      budget: { requestsPerSecond: 100, requestsPerHour: used + 4 },
    });
    expect(patched.statusCode).toBe(200);
    const spent = await run(feed.id, '?reconcile=true');
    expect(spent.ledger).toMatchObject({ keys: null, quarantined: 0, removed: 0, requests: 4 });
    expect(spent.ledger!.stopReason).toMatch(/key pull did not reach the end .*budget/);
    expect((await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json().reconciledAt).toBeNull();
    for (const key of keys(1, 8)) expect((await byKey(key))!.sourceMissing).toBeNull();
    expect(await searchable()).toEqual(keys(...[...Array(10).keys()]));
  });

  it('a schedule starts runs unattended, one at a time across replicas, the first with a key reconciliation', async () => {
    source.put(...ten());
    // A second replica on the same store: its runner polls for due feeds too.
    const replica = await ListingsHarness.start({ store: opened.store, start: false });
    replica.runtime.feedRuns.start();
    try {
      const feed = await createFeed({ schedule: { everyMinutes: 60 } });
      const created = (await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json();
      expect(created).toMatchObject({ schedule: { everyMinutes: 60 }, nextRunAt: expect.any(String) });
      const runs = await eventually(
        async () => {
          const page = (await call(alice, 'GET', `/v1/feeds/${feed.id}/runs`)).json() as { items: Job[] };
          if (page.items.length === 0 || !FINAL.includes(page.items[0].state)) throw new Error('no run ended yet');
          return page.items;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      // Both replicas polled the due feed; one started it.
      await h.runtime.feedRuns.idle();
      await replica.runtime.feedRuns.idle();
      expect((await call(alice, 'GET', `/v1/feeds/${feed.id}/runs`)).json().total).toBe(1);
      expect(runs[0]).toMatchObject({ state: 'succeeded', ledger: { created: 10, reconcile: true, keys: 10 } });
      const after = (await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json();
      expect(Date.parse(after.nextRunAt) - Date.parse(created.nextRunAt)).toBeGreaterThanOrEqual(60 * 60_000);
      expect(after.reconciledAt).toEqual(expect.any(String));
      // No schedule: no next run.
      const unscheduled = await call(alice, 'PATCH', `/v1/feeds/${feed.id}`, { schedule: null });
      expect(unscheduled.json()).toMatchObject({ schedule: null, nextRunAt: null });
    } finally {
      await replica.close();
    }
  });

  it('refuses plain http, private and loopback sources (422) unless private sources are allowed', async () => {
    await h.close();
    h = await ListingsHarness.start({ store: opened.store, allowPrivateSources: false });
    const body = (serviceRoot: string, auth: Record<string, unknown> = { type: 'bearer', token: 'source-token' }) => ({
      name: 'Refused',
      serviceRoot,
      auth,
    });
    const refused = [
      body(source.url),
      body('http://feeds.example.com/odata'),
      body('https://127.0.0.1/odata'),
      body('https://localhost:8443/odata'),
      body('https://10.1.2.3/odata'),
      body('https://192.168.0.10/odata'),
      body('https://[::1]/odata'),
      body('https://169.254.169.254/odata'),
      body('https://203.0.113.7/odata', {
        type: 'client_credentials',
        tokenUrl: 'https://10.0.0.5/token',
        clientId: 'c',
        clientSecret: 's',
      }),
      body('https://203.0.113.7/odata', {
        type: 'client_credentials',
        tokenUrl: 'http://auth.example.com/token',
        clientId: 'c',
        clientSecret: 's',
      }),
    ];
    for (const attempt of refused) {
      const res = await call(alice, 'POST', '/v1/feeds', attempt);
      expect({ root: attempt.serviceRoot, status: res.statusCode }).toEqual({ root: attempt.serviceRoot, status: 422 });
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    }
    expect((await call(alice, 'GET', '/v1/feeds')).json()).toMatchObject({ total: 0 });

    // A feed made while they were allowed cannot be moved to a private host, and its runs are refused at connection.
    await h.close();
    h = await ListingsHarness.start({ store: opened.store, allowPrivateSources: true });
    source.put(record(1, 1));
    const feed = await createFeed();
    await h.close();
    h = await ListingsHarness.start({ store: opened.store, allowPrivateSources: false });
    const moved = await call(alice, 'PATCH', `/v1/feeds/${feed.id}`, { serviceRoot: 'https://127.0.0.2/odata' });
    expect(moved.statusCode).toBe(422);
    const job = await run(feed.id);
    expect(job.state).toBe('failed');
    expect(job.ledger!.stopReason).toMatch(/refused|private|loopback|https/i);
    expect(source.requests).toEqual([]);
  });

  it('never exceeds the request budget: per hour, across runs, and per second', async () => {
    source.put(...[...Array(10).keys()].map((n) => record(n, n)));
    // A first run asks whether the source has EntityEvent (this one answers 404), then walks pages of three: the whole
    // feed takes five requests; the budget allows three an hour.
    const feed = await createFeed({ budget: { requestsPerSecond: 100, requestsPerHour: 3 } });
    const first = await run(feed.id);
    expect(source.requests).toHaveLength(3);
    expect(source.requests[0]).toMatch(/^\/odata\/EntityEvent\?/);
    expect(first.ledger).toMatchObject({ requests: 3, fetched: 6, created: 6, entityEvents: null });
    expect(first.ledger!.stopReason).toMatch(/budget/);
    // The hour is spent: the next run asks nothing and moves nothing.
    const second = await run(feed.id);
    expect(source.requests).toHaveLength(3);
    expect(second.ledger).toMatchObject({ requests: 0, fetched: 0, cursorAfter: first.ledger!.cursorAfter });
    expect(second.ledger!.stopReason).toMatch(/budget/);

    // Per second: a fresh feed at 10 requests a second asks about EntityEvent and walks four pages, never two requests
    // less than 100 ms apart at the source.
    source.requests.length = 0;
    source.times.length = 0;
    const paced = await createFeed({ name: 'Paced', budget: { requestsPerSecond: 10 } });
    const walked = await run(paced.id);
    expect(walked.ledger).toMatchObject({ requests: 5, fetched: 10 });
    expect(source.times).toHaveLength(5);
    const gaps = source.times.slice(1).map((t, i) => t - source.times[i]);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(100);
  });

  it('a run whose process dies mid-page is taken over once its lease lapses: every record applied once', async () => {
    // Twelve records, pages of five; the process dies asking for its eighth listing insert (the third of page two).
    source.put(...[...Array(12).keys()].map((n) => record(n, n)));
    const feed = await createFeed({ pageSize: 5 });
    await h.close();
    const dying = new DyingStore(opened.store, 8);
    h = await ListingsHarness.start({ store: dying });
    const started = await call(alice, 'POST', `/v1/feeds/${feed.id}/runs`);
    expect(started.statusCode).toBe(202);
    const runId = (started.json() as Job).id;
    await eventually(async () => expect(dying.dead).toBe(true), { timeoutMs: 10_000, intervalMs: 20 });
    await h.runtime.feedRuns.idle();
    await h.close().catch(() => undefined);

    // What the dead process left: seven listings written, the run recorded up to page one (the next taker's start).
    const jobs = await opened.store.collection<Job & { walk?: { listingKey: string } }>('bulk_jobs');
    const left = (await jobs.findOne({ id: runId }))!;
    expect(left.state).toBe('running');
    expect(left.walk).toMatchObject({ listingKey: 'K0004' });
    const listings = await opened.store.collection<{ id: string; externalId: string }>('listings');
    expect(await listings.count({})).toBe(7);

    // Another replica (its runner alone: no start-up release of leases) takes the run over when the lease lapses
    // and replays page two from its start.
    h = await ListingsHarness.start({ store: opened.store, start: false });
    h.runtime.feedRuns.start();
    const job = await eventually(
      async () => {
        const current = (await call(alice, 'GET', `/v1/jobs/${runId}`)).json() as Job;
        if (!FINAL.includes(current.state)) throw new Error(`run still ${current.state}`);
        return current;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(job.state).toBe('succeeded');
    expect(job.ledger).toMatchObject({ fetched: 12, created: 12, updated: 0, unchanged: 0, failed: 0 });
    // Read from the store: this replica runs no indexer.
    const all = await (
      await opened.store.collection<{ id: string; externalId: string; version: number }>('listings')
    ).find({});
    expect(all.map((l) => l.externalId).sort()).toEqual([...Array(12).keys()].map((n) => record(n, 0).ListingKey));
    expect(all.every((l) => l.version === 1)).toBe(true);
    const cursor = (await call(alice, 'GET', `/v1/feeds/${feed.id}`)).json().cursor;
    expect(cursor).toEqual({ modificationTimestamp: record(11, 11).ModificationTimestamp, listingKey: 'K0011' });
  });
}
