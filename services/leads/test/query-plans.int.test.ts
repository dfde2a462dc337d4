import { randomUUID } from 'node:crypto';
import { collectionScans, describeWithEngines, openRecordingStore, type QueryRecordingStore } from '@estate/testing';
import { admin, listing, log, publishListing, startLeads, type LeadsHarness } from './harness';

/**
 * Lead capture's queries (contact de-duplication by e-mail and phone, the summaries of the listings it names,
 * reading a lead or an agent) must be
 * answered from an index on MongoDB and pushed down to the backend on the test engine: `explain` says so.
 */
describeWithEngines('leads queries use indexes', ['MONGODB_URL'], (urls) => {
  const dbName = `plans_leads_${randomUUID().slice(0, 8)}`;
  let store: QueryRecordingStore;
  let drop: () => Promise<void>;
  let h: LeadsHarness;

  beforeAll(async () => {
    ({ store, drop } = await openRecordingStore(urls.MONGODB_URL, dbName, log));
    h = await startLeads({
      store,
      // A listing no event has brought yet: the capture asks the listings service, and keeps its summary.
      listings: { find: async (who, id) => (id === 'lst_asked' ? listing('lst_asked') : null) },
    });
  });
  afterAll(async () => {
    await h.close();
    await drop();
  });

  it('captures, de-duplicates and reads leads without a collection scan', async () => {
    for (let i = 0; i < 10; i++) {
      await publishListing(h.bus, 'acc_alice', listing(`lst_${i}`));
      const res = await h.call(admin, 'POST', '/v1/leads', {
        name: `L${i}`,
        email: `l${i}@example.com`,
        propertyInterests: [{ listingId: `lst_${i}` }],
      });
      expect(res.statusCode).toBe(201);
    }
    const agent = await h.call(admin, 'POST', '/v1/agents', { name: 'A', email: 'a@example.com' });
    expect(agent.statusCode).toBe(201);
    store.clear();
    const first = await h.call(admin, 'POST', '/v1/leads', {
      name: 'N',
      email: 'n@example.com',
      phone: '+15125550177',
      propertyInterests: [{ listingId: 'lst_3' }, { listingId: 'lst_asked' }],
    });
    expect(first.statusCode).toBe(201);
    const again = await h.call(admin, 'POST', '/v1/leads', { name: 'N', email: 'n@example.com' });
    expect(again.json().id).toBe(first.json().id);
    const byPhone = await h.call(admin, 'POST', '/v1/leads', { name: 'N', phone: '+15125550177' });
    expect(byPhone.json().id).toBe(first.json().id);
    expect((await h.call(admin, 'GET', `/v1/leads/${first.json().id}`)).statusCode).toBe(200);
    expect((await h.call(admin, 'GET', `/v1/agents/${agent.json().id}`)).statusCode).toBe(200);

    const single = store.queries.filter(
      (q) => (q.collection === 'leads' || q.collection === 'agents') && q.op !== 'find' && q.op !== 'count',
    );
    expect(single.some((q) => 'emailKey' in q.filter)).toBe(true);
    expect(single.some((q) => 'phoneKey' in q.filter)).toBe(true);
    const summaries = store.queries.filter((q) => q.collection === 'listing_summaries');
    expect(summaries.length).toBeGreaterThan(0);
    expect(await collectionScans(urls.MONGODB_URL, dbName, [...single, ...summaries])).toEqual([]);
  });

  it("pages through the account's leads and a lead's timeline within the account, not the collection", async () => {
    const lead = (await h.call(admin, 'POST', '/v1/leads', { name: 'P', email: 'p@example.com' })).json() as {
      id: string;
    };
    await h.call(admin, 'POST', '/v1/leads', { name: 'P', email: 'p@example.com', message: 'again' });
    store.clear();
    for (const path of ['/v1/leads?limit=2', `/v1/leads/${lead.id}/activities?limit=1`]) {
      const first = await h.call(admin, 'GET', path);
      expect(first.statusCode).toBe(200);
      const cursor = (first.json() as { nextCursor: string | null }).nextCursor;
      expect(cursor).not.toBeNull();
      expect((await h.call(admin, 'GET', `${path}&cursor=${encodeURIComponent(cursor!)}`)).statusCode).toBe(200);
    }
    const pages = store.queries.filter((q) => q.op === 'find');
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(await collectionScans(urls.MONGODB_URL, dbName, pages)).toEqual([]);
  });
});
