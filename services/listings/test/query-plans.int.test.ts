import { randomUUID } from 'node:crypto';
import {
  collectionScans,
  describeWithEngines,
  listingBody,
  openRecordingStore,
  type QueryRecordingStore,
} from '@estate/testing';
import { alice, bob, ListingsHarness, log } from './harness';

/**
 * The listings service's hot queries (read, update, delete one listing; look a feed key up) must be answered
 * from an index on MongoDB and pushed down to the backend on the test engine: `explain` says so.
 */
describeWithEngines('listings queries use indexes', ['MONGODB_URL'], (urls) => {
  const dbName = `plans_listings_${randomUUID().slice(0, 8)}`;
  let store: QueryRecordingStore;
  let drop: () => Promise<void>;
  let h: ListingsHarness;

  beforeAll(async () => {
    ({ store, drop } = await openRecordingStore(urls.MONGODB_URL, dbName, log));
    h = await ListingsHarness.start({ store, start: false });
  });
  afterAll(async () => {
    await h.close();
    await drop();
  });

  it('reads, updates and deletes a listing without a collection scan', async () => {
    // Enough listings that a scan would be worth avoiding.
    for (let i = 0; i < 20; i++)
      expect((await h.call(alice, 'POST', '/v1/listings', listingBody())).statusCode).toBe(201);
    store.clear();
    const created = (await h.call(alice, 'POST', '/v1/listings', listingBody())).json();
    expect((await h.call(alice, 'GET', `/v1/listings/${created.id}`)).statusCode).toBe(200);
    expect((await h.call(bob, 'GET', `/v1/listings/${created.id}`)).statusCode).toBe(404);
    const patched = await h.call(alice, 'PATCH', `/v1/listings/${created.id}`, { pricing: { listPrice: 500000 } });
    expect(patched.statusCode).toBe(200);
    expect((await h.call(alice, 'DELETE', `/v1/listings/${created.id}`)).statusCode).toBe(200);
    expect((await h.call(alice, 'GET', `/v1/listings/${created.id}`)).statusCode).toBe(404);

    const single = store.queries.filter((q) => q.collection === 'listings' && q.op !== 'find' && q.op !== 'count');
    expect(single.length).toBeGreaterThan(3);
    expect(await collectionScans(urls.MONGODB_URL, dbName, single)).toEqual([]);
  });

  it('would report a query that scans (the check can fail)', async () => {
    const scans = await collectionScans(urls.MONGODB_URL, dbName, [
      { collection: 'listings', op: 'findOne', filter: { 'address.city': { $gt: 'A' } } },
    ]);
    expect(scans).toHaveLength(1);
  });
});
