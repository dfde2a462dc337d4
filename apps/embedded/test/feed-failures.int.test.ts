import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { eventually, readSse, ResoTestSource, type SourceRecord } from '@estate/testing';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_feed_failures_0123456789';
const WAIT = { timeoutMs: 30_000, intervalMs: 50 };
type Cursor = { modificationTimestamp: string; listingKey: string };
type Ledger = Record<string, unknown> & { cursorAfter: Cursor | null; stopReason: string | null };
type Run = { id: string; state: string; ledger: Ledger };
type Listing = { id: string; externalId: string; version: number; pricing: { listPrice: number } };

/** A source record: `n` gives its key and price, `t` its ModificationTimestamp (seconds into 2026). */
const record = (n: number, t: number, extra: Record<string, unknown> = {}): SourceRecord => ({
  ListingKey: `F${String(n).padStart(3, '0')}`,
  ModificationTimestamp: new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString(),
  StandardStatus: 'Active',
  PropertyType: 'Residential',
  ListPrice: 200_000 + n,
  UnparsedAddress: `${n} Oak St`,
  City: 'Austin',
  StateOrProvince: 'TX',
  PostalCode: '78701',
  ...extra,
});
const cursorOf = (r: SourceRecord): Cursor => ({
  modificationTimestamp: r.ModificationTimestamp,
  listingKey: r.ListingKey,
});

/**
 * A feed source that fails mid-run (credentials revoked, a long Retry-After, a page that is not a page, records
 * committed behind the cursor): the run ends with a reason that names the problem, nothing of the failed page is
 * written, the cursor stays at the last page written, and the next run goes on from there.
 */
describe('feed sync against a failing source (embedded)', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let source: ResoTestSource;
  let feeds = 0;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await product.app.inject({
      method: method as 'GET',
      url: path,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  /** A feed of its own source name, pages of two. */
  const createFeed = async (extra: Record<string, unknown> = {}) => {
    const name = `fail-mls-${++feeds}`;
    const res = await call('POST', '/v1/feeds', {
      name,
      serviceRoot: source.url,
      auth: { type: 'bearer', token: 'source-token' },
      originatingSystemName: name,
      budget: { requestsPerSecond: 100 },
      pageSize: 2,
      ...extra,
    });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, source: name };
  };
  const run = async (feedId: string): Promise<Run> => {
    const started = await call('POST', `/v1/feeds/${feedId}/runs`);
    expect(started.status).toBe(202);
    return eventually(async () => {
      const job = (await call('GET', `/v1/jobs/${started.body.id}`)).body as Run;
      if (['queued', 'running'].includes(job.state)) throw new Error(`run still ${job.state}`);
      return job;
    }, WAIT);
  };
  const cursor = async (feedId: string): Promise<Cursor | null> =>
    (await call('GET', `/v1/feeds/${feedId}`)).body.cursor as Cursor | null;
  /** The feed's listings by key, read from the store's own answers (GET by id), not the search index. */
  const synced = async (feedSource: string): Promise<Map<string, Listing>> => {
    const page = (await call('GET', `/v1/listings?limit=100&source=${feedSource}`)).body as { items: Listing[] };
    return new Map(page.items.map((l) => [l.externalId, l]));
  };
  /** Waits until search shows exactly these keys of the feed. */
  const syncedKeys = (feedSource: string, keys: string[]) =>
    eventually(async () => {
      const got = await synced(feedSource);
      expect([...got.keys()].sort()).toEqual([...keys].sort());
      return got;
    }, WAIT);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'estate-feed-failures-'));
    product = await startEmbedded(dir, {
      adminApiKey: ADMIN,
      rateLimitPerMinute: 100_000,
      feeds: { allowPrivateSources: true },
    });
  });
  beforeEach(async () => {
    source = await new ResoTestSource().start();
  });
  afterEach(async () => {
    await source.close();
  });
  afterAll(async () => {
    await product?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const six = () => [...Array(6).keys()].map((n) => record(n, n));
  const keys = (...ns: number[]) => ns.map((n) => record(n, 0).ListingKey);
  const clientCredentials = () => ({
    type: 'client_credentials',
    tokenUrl: source.tokenUrl,
    clientId: 'source-client',
    clientSecret: 'source-secret',
  });

  it('a token that expires mid-run is fetched again once and the request retried; revoked credentials fail the run with an auth error, the cursor at the last page written', async () => {
    source.put(...six());
    source.faults = { tokenUses: 2 };
    const expiring = await createFeed({ auth: clientCredentials() });
    const renewed = await run(expiring.id);
    expect(renewed.state).toBe('succeeded');
    expect(renewed.ledger).toMatchObject({ fetched: 6, created: 6, stopReason: null });
    expect(source.tokens).toHaveLength(2);
    await syncedKeys(expiring.source, keys(0, 1, 2, 3, 4, 5));

    // The credentials are revoked after two pages: the API answers 401, and so does the token endpoint.
    const records = six();
    source.records.clear();
    source.put(...records);
    source.faults = { revoked: true, afterPages: source.pages + 2 };
    const revoked = await createFeed({ auth: clientCredentials() });
    const failed = await run(revoked.id);
    expect(failed.state).toBe('partially_failed');
    expect(failed.ledger.stopReason).toMatch(/token endpoint refused the feed's client credentials \(401\)/);
    expect(failed.ledger).toMatchObject({ fetched: 4, created: 4, cursorAfter: cursorOf(records[3]) });
    expect(await cursor(revoked.id)).toEqual(cursorOf(records[3]));
    await syncedKeys(revoked.source, keys(0, 1, 2, 3));

    // A bearer token refused mid-run cannot be renewed: the run says the source refused it.
    source.faults = { revoked: true, afterPages: source.pages + 1 };
    const bearer = await createFeed();
    const refused = await run(bearer.id);
    expect(refused.state).toBe('partially_failed');
    expect(refused.ledger.stopReason).toMatch(/refused the feed's bearer token \(401 at \/odata\/Property\)/);
    expect(await cursor(bearer.id)).toEqual(cursorOf(records[1]));

    // Tokens the endpoint issues but the API refuses: one fresh token, then the run says so.
    source.faults = { tokenUses: 0 };
    const unusable = await createFeed({ auth: clientCredentials() });
    const tokens = source.tokens.length;
    const refusedFresh = await run(unusable.id);
    expect(refusedFresh.state).toBe('failed');
    expect(refusedFresh.ledger.stopReason).toMatch(/refused a fresh token of the feed's client credentials \(401/);
    expect(source.tokens.length - tokens).toBe(2);
    expect(await cursor(unusable.id)).toBeNull();

    // Credentials back: the next run goes on from the cursor and applies each record once.
    source.faults = {};
    const resumed = await run(revoked.id);
    expect(resumed.state).toBe('succeeded');
    expect(resumed.ledger).toMatchObject({ created: 2, updated: 0 });
    const all = await syncedKeys(revoked.source, keys(0, 1, 2, 3, 4, 5));
    expect([...all.values()].every((l) => l.version === 1)).toBe(true);
  });

  it('credentials that cannot travel in a header: refused when the feed is written, and a token endpoint issuing one fails the run saying so', async () => {
    for (const token of ['line\nbreak', 'with space', 'naïve']) {
      const refused = await call('POST', '/v1/feeds', {
        name: 'bad token',
        serviceRoot: source.url,
        auth: { type: 'bearer', token },
      });
      expect({ status: refused.status, paths: refused.body.errors.map((e: { path: string }) => e.path) }).toEqual({
        status: 422,
        paths: ['auth.token'],
      });
    }
    expect(
      (await call('GET', '/v1/feeds?limit=100')).body.items.some((f: { name: string }) => f.name === 'bad token'),
    ).toBe(false);

    source.put(...six());
    source.faults = { unsendableToken: true };
    const feed = await createFeed({ auth: clientCredentials() });
    const failed = await run(feed.id);
    expect(failed.state).toBe('failed');
    expect(failed.ledger.stopReason).toMatch(/access token that cannot be sent in an HTTP header/);
    expect(source.pages).toBe(0);
    expect(await cursor(feed.id)).toBeNull();
  });

  it('a Retry-After of an hour ends the run at once with the time to come back, the cursor kept, and no scheduled run before then', async () => {
    const records = six();
    source.put(...records);
    // After the first page, every request is answered 429 with an hour's Retry-After.
    source.faults = { tooManyRequests: 100, retryAfter: '3600', afterPages: 1 };
    const feed = await createFeed({ schedule: { everyMinutes: 5 } });
    const ended = await eventually(async () => {
      const got = (await call('GET', `/v1/feeds/${feed.id}`)).body as { lastRunId: string | null };
      if (!got.lastRunId) throw new Error('no run yet');
      const job = (await call('GET', `/v1/jobs/${got.lastRunId}`)).body as Run;
      if (['queued', 'running'].includes(job.state)) throw new Error(`run still ${job.state}`);
      return job;
    }, WAIT);
    expect(ended.state).toBe('partially_failed');
    expect(ended.ledger).toMatchObject({ fetched: 2, created: 2, retries: 0, cursorAfter: cursorOf(records[1]) });
    const until = /until (\S+):/.exec(ended.ledger.stopReason ?? '')?.[1];
    expect(ended.ledger.stopReason).toMatch(/answered 429 and asked to wait 3600 s, until /);
    expect(Date.parse(until!) - Date.now()).toBeGreaterThan(3500_000);
    // The EntityEvent probe (404 here), one page, then one request answered 429, none repeated.
    expect(source.requests.length).toBe(3);
    const after = (await call('GET', `/v1/feeds/${feed.id}`)).body as { cursor: Cursor; nextRunAt: string };
    expect(after.cursor).toEqual(cursorOf(records[1]));
    expect(after.nextRunAt).toBe(until);
    await syncedKeys(feed.source, keys(0, 1));
  });

  it('a page that is not a page (HTML with a 200, JSON without `value`) ends the run naming the problem; nothing of it written, the cursor kept', async () => {
    const records = six();
    source.put(...records);
    // The second page of the walk is an HTML error page answered 200.
    source.faults = {
      brokenPage: {
        at: source.pages + 2,
        body: '<!DOCTYPE html><html><body><h1>Service Temporarily Unavailable</h1></body></html>',
        contentType: 'text/html',
      },
    };
    const feed = await createFeed();
    const html = await run(feed.id);
    expect(html.state).toBe('partially_failed');
    expect(html.ledger.stopReason).toMatch(
      /answered 200 to \/odata\/Property with a body that is not JSON \(text\/html: "<!DOCTYPE html><html><body><h1>Service/,
    );
    expect(html.ledger).toMatchObject({ fetched: 2, created: 2, cursorAfter: cursorOf(records[1]) });
    expect(await cursor(feed.id)).toEqual(cursorOf(records[1]));
    await syncedKeys(feed.source, keys(0, 1));

    // The next run starts inside the overlap (the first page again, unchanged), takes the second page, and its
    // third is `{}`.
    source.faults = { brokenPage: { at: source.pages + 3, body: '{}', contentType: 'application/json' } };
    const empty = await run(feed.id);
    expect(empty.ledger.stopReason).toMatch(/with JSON without a `value` list \(an empty object\)/);
    expect(empty.ledger).toMatchObject({ fetched: 4, unchanged: 2, created: 2, cursorAfter: cursorOf(records[3]) });
    expect(await cursor(feed.id)).toEqual(cursorOf(records[3]));
    await syncedKeys(feed.source, keys(0, 1, 2, 3));

    // A sound source again: every record written once.
    source.faults = {};
    const done = await run(feed.id);
    expect(done.state).toBe('succeeded');
    const all = await syncedKeys(feed.source, keys(0, 1, 2, 3, 4, 5));
    expect([...all.values()].every((l) => l.version === 1)).toBe(true);
  });

  it('records changed during a run: one stamped ahead is taken by the same run, one stamped behind what was served by the next run (the overlap); each applied once', async () => {
    source.put(...six());
    // Once two pages are served, the source commits F000 changed (stamped after everything) and F002 changed,
    // stamped behind F003, which the walk has already passed.
    source.faults = {
      commitsAfter: {
        pages: source.pages + 2,
        records: [record(0, 10, { ListPrice: 111_000 }), record(2, 2.5, { ListPrice: 222_000 })],
      },
    };
    const feed = await createFeed();
    const first = await run(feed.id);
    expect(first.state).toBe('succeeded');
    expect(first.ledger).toMatchObject({ fetched: 7, created: 6, updated: 1, cursorAfter: cursorOf(record(0, 10)) });
    let got = await syncedKeys(feed.source, keys(0, 1, 2, 3, 4, 5));
    expect(got.get('F000')).toMatchObject({ version: 2, pricing: { listPrice: 111_000 } });
    expect(got.get('F002')).toMatchObject({ version: 1, pricing: { listPrice: 200_002 } });

    // The next run starts five minutes before the cursor: F002's change is behind the cursor, not lost.
    const second = await run(feed.id);
    expect(second.ledger).toMatchObject({ fetched: 6, created: 0, updated: 1, unchanged: 5 });
    got = await eventually(async () => {
      const now = await synced(feed.source);
      expect(now.get('F002')).toMatchObject({ version: 2, pricing: { listPrice: 222_000 } });
      return now;
    }, WAIT);
    expect([...got.values()].map((l) => [l.externalId, l.version]).sort()).toEqual([
      ['F000', 2],
      ['F001', 1],
      ['F002', 2],
      ['F003', 1],
      ['F004', 1],
      ['F005', 1],
    ]);
    const third = await run(feed.id);
    expect(third.ledger).toMatchObject({ created: 0, updated: 0, unchanged: 6 });
  });

  it('applies a page in steps of 25 records, each committed with its position and its progress sent between them', async () => {
    const records = [...Array(60).keys()].map((n) => record(n, n));
    source.put(...records);
    let release!: () => void;
    source.faults = { held: new Promise<void>((resolve) => (release = resolve)) };
    const feed = await createFeed({ pageSize: 100 });
    const started = await call('POST', `/v1/feeds/${feed.id}/runs`);
    expect(started.status).toBe(202);
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = product.app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v1/jobs/${started.body.id}/events`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    // The source answers the page once the stream is open, so the stream sees every step.
    const { events } = await readSse(res, () => release());
    const progress = events.map((e) => JSON.parse(e.data) as { state: string; progress: { processed: number } });
    const processed = progress.map((p) => p.progress.processed);
    expect(processed).toEqual(expect.arrayContaining([0, 25, 50, 60]));
    expect(processed).toEqual([...processed].sort((a, b) => a - b));
    expect(progress.at(-1)!.state).toBe('succeeded');
    expect(await cursor(feed.id)).toEqual(cursorOf(records[59]));
    await syncedKeys(
      feed.source,
      records.map((r) => r.ListingKey),
    );
  });
});
