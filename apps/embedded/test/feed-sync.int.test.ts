import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody } from '@estate/testing';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN_A = 'ek_test_admin_key_feed_source_0123456789ab';
const ADMIN_B = 'ek_test_admin_key_feed_target_0123456789ab';
const WAIT = { timeoutMs: 30_000, intervalMs: 50 };

type Listing = {
  id: string;
  externalId?: string;
  source?: string;
  version: number;
  pricing: { listPrice: number };
  propertyDetails: { bedrooms?: number; livingArea?: number; features?: string[] };
  location: { address: { street?: string; city: string; postalCode?: string } };
};
type Ledger = Record<string, unknown> & { created: number; updated: number; unchanged: number; fetched: number };
type Run = { id: string; state: string; ledger: Ledger };

/**
 * Instance A (the embedded product) serves its listings through its own RESO Web API; instance B syncs them through
 * a feed, with A's API key as the bearer token or with client credentials at A's `/reso/token`. A second run after
 * changes on A writes only what changed.
 */
describe('feed sync from a second instance of the product (A serves RESO, B syncs)', () => {
  const dirs: string[] = [];
  let a: EmbeddedProduct;
  let b: EmbeddedProduct;
  let baseA: string;
  let baseB: string;

  const listen = async (product: EmbeddedProduct) => {
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
  };
  const api = async (base: string, key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const onA = (method: string, path: string, body?: unknown) => api(baseA, ADMIN_A, method, path, body);
  const onB = (method: string, path: string, body?: unknown) => api(baseB, ADMIN_B, method, path, body);

  /** Runs a feed of B and waits for its run to end. */
  const run = async (feedId: string): Promise<Run> => {
    const started = await onB('POST', `/v1/feeds/${feedId}/runs`);
    expect(started.status).toBe(202);
    return eventually(async () => {
      const job = (await onB('GET', `/v1/jobs/${started.body.id}`)).body as Run;
      if (['queued', 'running'].includes(job.state)) throw new Error(`run still ${job.state}`);
      return job;
    }, WAIT);
  };
  /** B's listings of one source, by A's listing id (their externalId). */
  const syncedOn = async (source: string): Promise<Map<string, Listing>> => {
    const page = (await onB('GET', `/v1/listings?limit=100&source=${encodeURIComponent(source)}`)).body as {
      items: Listing[];
    };
    return new Map(page.items.filter((l) => l.source === source).map((l) => [l.externalId!, l]));
  };
  /** Waits until A's RESO server shows what A's API shows (its search index follows the writes). */
  const servedByA = async (expected: Map<string, number>) =>
    eventually(async () => {
      const page = await onA('GET', '/reso/odata/Property?$select=ListingKey,ListPrice&$top=1000');
      const served = new Map(
        (page.body.value as Array<{ ListingKey: string; ListPrice: number }>).map((r) => [r.ListingKey, r.ListPrice]),
      );
      expect(served).toEqual(expected);
    }, WAIT);

  let onAListings: Listing[];

  beforeAll(async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'estate-feed-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'estate-feed-b-'));
    dirs.push(dirA, dirB);
    a = await startEmbedded(dirA, { adminApiKey: ADMIN_A, rateLimitPerMinute: 100_000 });
    b = await startEmbedded(dirB, {
      adminApiKey: ADMIN_B,
      rateLimitPerMinute: 100_000,
      feeds: { allowPrivateSources: true },
    });
    baseA = await listen(a);
    baseB = await listen(b);
    onAListings = [];
    for (let n = 0; n < 5; n++) {
      const made = await onA(
        'POST',
        '/v1/listings',
        listingBody({
          pricing: { listPrice: 300_000 + n * 1000, currency: 'USD' },
          location: {
            address: {
              street: `${n + 1} Elm St`,
              city: 'Austin',
              stateOrProvince: 'TX',
              postalCode: '78701',
              country: 'US',
            },
            latitude: 30.27,
            longitude: -97.74,
          },
        }),
      );
      expect(made.status).toBe(201);
      onAListings.push(made.body as Listing);
    }
    await servedByA(new Map(onAListings.map((l) => [l.id, l.pricing.listPrice])));
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("syncs A's listings with A's API key as the bearer token, then only what changed on A", async () => {
    const created = await onB('POST', '/v1/feeds', {
      name: 'Instance A',
      serviceRoot: `${baseA}/reso/odata`,
      auth: { type: 'bearer', token: ADMIN_A },
      originatingSystemName: 'instance-a',
      budget: { requestsPerSecond: 50 },
      pageSize: 2,
    });
    expect(created.status).toBe(201);
    const feedId = created.body.id as string;

    const first = await run(feedId);
    expect(first.state).toBe('succeeded');
    expect(first.ledger).toMatchObject({ fetched: 5, created: 5, updated: 0, unchanged: 0, failed: 0 });
    const synced = await syncedOn('instance-a');
    expect([...synced.keys()].sort()).toEqual(onAListings.map((l) => l.id).sort());
    for (const original of onAListings) {
      const copy = synced.get(original.id)!;
      expect(copy).toMatchObject({
        version: 1,
        pricing: { listPrice: original.pricing.listPrice },
        propertyDetails: { bedrooms: 3, livingArea: 1850 },
        location: { address: { city: 'Austin', postalCode: '78701' } },
      });
    }

    // On A: one price changes, one listing is added.
    const changed = onAListings[2];
    expect((await onA('PATCH', `/v1/listings/${changed.id}`, { pricing: { listPrice: 299_000 } })).status).toBe(200);
    const added = await onA('POST', '/v1/listings', listingBody({ pricing: { listPrice: 510_000, currency: 'USD' } }));
    expect(added.status).toBe(201);
    await servedByA(
      new Map([
        ...onAListings.map((l): [string, number] => [l.id, l.id === changed.id ? 299_000 : l.pricing.listPrice]),
        [added.body.id as string, 510_000],
      ]),
    );

    // The second run starts from the cursor (with its overlap window): the records seen again are not written.
    const second = await run(feedId);
    expect(second.state).toBe('succeeded');
    expect(second.ledger).toMatchObject({ created: 1, updated: 1, failed: 0 });
    expect(second.ledger.unchanged).toBe(second.ledger.fetched - 2);
    const after = await syncedOn('instance-a');
    expect(after.size).toBe(6);
    expect(after.get(changed.id)).toMatchObject({ version: 2, pricing: { listPrice: 299_000 } });
    expect(after.get(added.body.id as string)).toMatchObject({ version: 1, pricing: { listPrice: 510_000 } });
    for (const l of onAListings.filter((l) => l.id !== changed.id)) expect(after.get(l.id)!.version).toBe(1);

    // A deletes a listing. B's next run learns it from A's EntityEvent, without a key pull, and hides it.
    const deleted = onAListings[4];
    expect((await onA('DELETE', `/v1/listings/${deleted.id}`)).status).toBe(200);
    // The deletion itself is numbered in A's EntityEvent (an earlier event of the listing may settle later).
    await eventually(async () => {
      const newest = await onA('GET', '/reso/odata/EntityEvent?$orderby=EntityEventSequence%20desc&$top=1');
      expect(newest.body.value[0]).toMatchObject({
        ResourceName: 'Property',
        ResourceRecordKey: deleted.id,
        X_EventType: expect.stringContaining('deleted'),
      });
    }, WAIT);
    const third = await run(feedId);
    expect(third.state).toBe('succeeded');
    expect(third.ledger).toMatchObject({ keys: null, quarantined: 1, removed: 0, failed: 0 });
    expect(third.ledger.entityEvents).not.toBeNull();
    const shown = await syncedOn('instance-a');
    expect([...shown.keys()].sort()).toEqual([...after.keys()].filter((k) => k !== deleted.id).sort());
  });

  it("syncs with client credentials at A's /reso/token (an integration key of A)", async () => {
    const key = await onA('POST', '/v1/api-keys', { name: 'instance B', role: 'integration' });
    expect(key.status).toBe(201);
    const created = await onB('POST', '/v1/feeds', {
      name: 'Instance A by token',
      serviceRoot: `${baseA}/reso/odata`,
      auth: {
        type: 'client_credentials',
        tokenUrl: `${baseA}/reso/token`,
        clientId: key.body.id,
        clientSecret: key.body.secret,
      },
      originatingSystemName: 'instance-a-oauth',
      budget: { requestsPerSecond: 50 },
    });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain(key.body.secret);
    const job = await run(created.body.id);
    expect(job.state).toBe('succeeded');
    // A's listings, less the one deleted above.
    expect(job.ledger).toMatchObject({ fetched: 5, created: 5, failed: 0 });
    // One token request (the token serves the whole run), where to start following A's EntityEvent, one page, A's
    // EntityEvent since; and a presence check when an event of the test above, settled meanwhile, names a listing
    // just synced (found still there).
    expect(job.ledger.entityEvents).not.toBeNull();
    expect([job.ledger.entityEvents === 0 ? 4 : 5, 4]).toContain(job.ledger.requests);
    expect(job.ledger.quarantined).toBe(0);
    expect((await syncedOn('instance-a-oauth')).size).toBe(5);
  });
});
