import { asCaller, identityFor, listingBody } from '@estate/testing';
import { alice, bob, ListingsHarness } from './harness';

describe('listings service over HTTP (embedded adapters, signed identity)', () => {
  let h: ListingsHarness;
  const call: ListingsHarness['call'] = (...args) => h.call(...args);
  const create = (who = alice, body = listingBody()) => call(who, 'POST', '/v1/listings', body);

  beforeEach(async () => {
    h = await ListingsHarness.start();
  });
  afterEach(() => h.close());

  it('creates a listing with server-owned fields, ETag and Location, and publishes listings.listing.created', async () => {
    const res = await create();
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      id: expect.stringMatching(/^lst_/),
      status: 'active',
      version: 1,
      pricing: { listPrice: 450000, currency: 'USD', pricePerArea: 243.24 },
      propertyDetails: { livingAreaUnits: 'sqft' },
      media: { photoCount: 0, primaryPhoto: null, virtualTours: [] },
      listedAt: expect.any(String),
    });
    expect(body).not.toHaveProperty('accountId');
    expect(res.headers.etag).toBe('"1"');
    expect(res.headers.location).toBe(`/v1/listings/${body.id}`);
    await h.runtime.relay.flush();
    expect(h.events.map((e) => e.subject)).toEqual(['listings.listing.created']);
    expect(h.events[0].payload).toMatchObject({
      accountId: 'acc_alice',
      listingId: body.id,
      version: 1,
      listing: { id: body.id },
    });
  });

  it("reads its own listing and answers 404 for another account's, without revealing it exists", async () => {
    const { id } = (await create()).json();
    expect((await call(alice, 'GET', `/v1/listings/${id}`)).json().id).toBe(id);
    const foreign = await call(bob, 'GET', `/v1/listings/${id}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(foreign.json()).toMatchObject({
      code: 'listing_not_found',
      status: 404,
      requestId: foreign.headers['x-request-id'],
    });
    expect((await call(bob, 'PATCH', `/v1/listings/${id}`, { status: 'closed' })).statusCode).toBe(404);
    expect((await call(bob, 'DELETE', `/v1/listings/${id}`)).statusCode).toBe(404);
    expect((await call(bob, 'GET', '/v1/listings')).json().total).toBe(0);
  });

  it('refuses unknown and read-only fields, bad enumerations and bad values with every path, storing nothing', async () => {
    const res = await create(alice, {
      ...listingBody({ status: 'sold', id: 'mine', version: 9 }),
      pricing: { listPrice: 0 },
      colour: 'red',
    });
    expect(res.statusCode).toBe(422);
    const paths = res
      .json()
      .errors.map((e: { path: string }) => e.path)
      .sort();
    expect(paths).toEqual(['colour', 'id', 'pricing.listPrice', 'status', 'version']);
    expect(res.json().errors.find((e: { path: string }) => e.path === 'id').message).toMatch(/read-only/);
    expect((await call(alice, 'GET', '/v1/listings')).json().total).toBe(0);
  });

  it('refuses a body that is not JSON (400) or not declared as JSON (415)', async () => {
    const bad = await call(alice, 'POST', '/v1/listings', '{"pricing":', { 'content-type': 'application/json' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('malformed_request');
    const text = await call(alice, 'POST', '/v1/listings', 'hello', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.json().code).toBe('unsupported_media_type');
  });

  it('applies a merge patch: nested fields merge, null clears an optional field, required fields cannot be cleared', async () => {
    const { id } = (await create()).json();
    const res = await call(alice, 'PATCH', `/v1/listings/${id}`, {
      pricing: { listPrice: 500000 },
      propertyDetails: { description: null },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      version: 2,
      pricing: { listPrice: 500000, currency: 'USD', pricePerArea: 270.27 },
    });
    expect(res.json().propertyDetails).not.toHaveProperty('description');
    expect(res.json().propertyDetails.bedrooms).toBe(3);
    expect(res.headers.etag).toBe('"2"');
    const cleared = await call(alice, 'PATCH', `/v1/listings/${id}`, { pricing: { listPrice: null } });
    expect(cleared.statusCode).toBe(422);
    expect(cleared.json().errors[0].path).toBe('pricing.listPrice');
    const readOnly = await call(alice, 'PATCH', `/v1/listings/${id}`, { version: 7 });
    expect(readOnly.statusCode).toBe(422);
    expect((await call(alice, 'GET', `/v1/listings/${id}`)).json().version).toBe(2);
  });

  it('honours If-Match: the current version applies, a stale one is 412 and changes nothing', async () => {
    const { id } = (await create()).json();
    const ok = await call(alice, 'PATCH', `/v1/listings/${id}`, { status: 'pending' }, { 'if-match': '"1"' });
    expect(ok.statusCode).toBe(200);
    const stale = await call(alice, 'PATCH', `/v1/listings/${id}`, { status: 'closed' }, { 'if-match': '"1"' });
    expect(stale.statusCode).toBe(412);
    expect(stale.json().code).toBe('version_mismatch');
    expect((await call(alice, 'GET', `/v1/listings/${id}`)).json().status).toBe('pending');
  });

  it('sets listedAt when a listing first goes on the market, and keeps it', async () => {
    const { id, listedAt } = (await create(alice, listingBody({ status: 'coming_soon' }))).json();
    expect(listedAt).toEqual(expect.any(String));
    const later = await call(alice, 'PATCH', `/v1/listings/${id}`, { status: 'active' });
    expect(later.json().listedAt).toBe(listedAt);
    const held = (await create(alice, listingBody({ status: 'hold' }))).json();
    expect(held.listedAt).toBeNull();
  });

  it('keeps externalId + source unique per account (409), but not across accounts', async () => {
    const first = await create(alice, listingBody({ externalId: 'MLS-1', source: 'acme-mls' }));
    expect(first.statusCode).toBe(201);
    const again = await create(alice, listingBody({ externalId: 'MLS-1', source: 'acme-mls' }));
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'listing_exists', existingId: first.json().id });
    expect((await create(bob, listingBody({ externalId: 'MLS-1', source: 'acme-mls' }))).statusCode).toBe(201);
    expect((await create(alice, listingBody({ externalId: 'MLS-1' }))).statusCode).toBe(422);
  });

  it('deletes: confirms, then 404, and publishes listings.listing.deleted', async () => {
    const { id } = (await create(alice, listingBody({ externalId: 'X', source: 's' }))).json();
    const res = await call(alice, 'DELETE', `/v1/listings/${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, deleted: true });
    expect((await call(alice, 'GET', `/v1/listings/${id}`)).statusCode).toBe(404);
    expect((await call(alice, 'DELETE', `/v1/listings/${id}`)).statusCode).toBe(404);
    await h.runtime.relay.flush();
    expect(h.events.map((e) => e.subject)).toEqual(['listings.listing.created', 'listings.listing.deleted']);
    expect(h.events[1].payload).toMatchObject({ listingId: id, version: 2 });
    expect((await create(alice, listingBody({ externalId: 'X', source: 's' }))).statusCode).toBe(201);
  });

  it('pages through every listing exactly once with cursors, filters and sorts', async () => {
    const prices = [300000, 100000, 500000, 200000, 400000];
    for (const [i, listPrice] of prices.entries()) {
      await create(alice, listingBody({ pricing: { listPrice }, status: i % 2 ? 'pending' : 'active' }));
    }
    // Search reads the index, which the events keep in step: wait for them.
    await h.runtime.relay.flush();
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/listings?limit=2&sort=-listPrice${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await call(alice, 'GET', url)).json();
      expect(page.total).toBe(5);
      seen.push(...page.items.map((l: { pricing: { listPrice: number } }) => l.pricing.listPrice));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([500000, 400000, 300000, 200000, 100000]);
    const filtered = (await call(alice, 'GET', '/v1/listings?status=pending&sort=listPrice')).json();
    expect(filtered.items.map((l: { pricing: { listPrice: number } }) => l.pricing.listPrice)).toEqual([
      100000, 200000,
    ]);
    const both = (
      await call(alice, 'GET', '/v1/listings?status=active,pending&minPrice=200000&maxPrice=400000')
    ).json();
    expect(both.total).toBe(3);
  });

  it('rejects bad list parameters: limit outside 1..100 (422), an undecodable cursor (400), unknown sort (422)', async () => {
    for (const url of [
      '/v1/listings?limit=0',
      '/v1/listings?limit=101',
      '/v1/listings?sort=colour',
      '/v1/listings?status=sold',
      '/v1/listings?minPrice=5&maxPrice=1',
      '/v1/listings?colour=red',
    ]) {
      const res = await call(alice, 'GET', url);
      expect({ url, status: res.statusCode, code: res.json().code }).toEqual({
        url,
        status: 422,
        code: 'validation_failed',
      });
    }
    const res = await call(alice, 'GET', '/v1/listings?cursor=not-a-cursor');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_cursor');
  });

  it('lets agents read but not write (403)', async () => {
    const agent = identityFor('acc_alice', 'agent', 'agt_1');
    const { id } = (await create()).json();
    expect((await call(agent, 'GET', `/v1/listings/${id}`)).statusCode).toBe(200);
    const res = await create(agent);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('forbidden');
  });

  it("refuses requests that do not carry the gateway's signature, or carry a forged one", async () => {
    expect((await call(null, 'GET', '/v1/listings')).statusCode).toBe(401);
    const forged = {
      ...asCaller(alice, 'GET', '/v1/listings'),
      'x-estate-identity': Buffer.from(JSON.stringify(bob)).toString('base64url'),
    };
    expect((await h.app.inject({ method: 'GET', url: '/v1/listings', headers: forged })).statusCode).toBe(401);
    const otherUrl = asCaller(alice, 'GET', '/v1/listings?limit=1');
    expect((await h.app.inject({ method: 'GET', url: '/v1/listings', headers: otherUrl })).statusCode).toBe(401);
  });
});
