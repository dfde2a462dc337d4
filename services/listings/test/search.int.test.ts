import { listingBody } from '@estate/testing';
import { alice, bob, ListingsHarness } from './harness';

/** `GET /v1/listings` over HTTP on the embedded adapters: the in-process index fed by the in-process bus. */
describe('listing search over HTTP (in-process index)', () => {
  let h: ListingsHarness;

  const get = (url: string, who = alice) => h.call(who, 'GET', url);
  const found = async (url: string) => {
    const res = await get(url);
    expect(res.statusCode).toBe(200);
    return (res.json().items as Array<{ externalId: string }>).map((l) => l.externalId);
  };
  const create = async (externalId: string, over: Record<string, unknown>, who = alice) => {
    const res = await h.call(who, 'POST', '/v1/listings', listingBody({ externalId, source: 'test', ...over }));
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };

  beforeEach(async () => {
    h = await ListingsHarness.start();
    await create('cottage', {
      pricing: { listPrice: 250000 },
      propertyDetails: {
        propertyType: 'residential',
        bedrooms: 2,
        bathrooms: 1,
        livingArea: 900,
        description: 'Stone cottage with a wood stove',
        features: ['garden'],
      },
    });
    await create('loft', {
      status: 'pending',
      pricing: { listPrice: 480000 },
      propertyDetails: {
        propertyType: 'residential',
        bedrooms: 1,
        livingArea: 100,
        livingAreaUnits: 'sqm',
        description: 'Open-plan loft downtown',
      },
      location: {
        address: { street: '5 Congress Ave', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701' },
        latitude: 30.266,
        longitude: -97.743,
      },
    });
    await create('farm', {
      pricing: { listPrice: 1250000 },
      propertyDetails: { propertyType: 'farm', description: 'Working farm with a stone barn' },
      location: {
        address: { street: '1 County Rd', city: 'Dripping Springs', stateOrProvince: 'TX', postalCode: '78620' },
        latitude: 30.19,
        longitude: -98.09,
      },
    });
    await create('elsewhere', {}, bob);
    // Search reads the index, which the events keep in step: wait for them.
    await h.runtime.relay.flush();
  });
  afterEach(() => h.close());

  it('filters by every kind of parameter, comma lists and repeated parameters alike', async () => {
    expect(await found('/v1/listings?sort=listPrice')).toEqual(['cottage', 'loft', 'farm']);
    expect(await found('/v1/listings?sort=listPrice&status=active,pending&propertyType=residential')).toEqual([
      'cottage',
      'loft',
    ]);
    expect(await found('/v1/listings?sort=listPrice&status=pending&status=active&propertyType=farm')).toEqual(['farm']);
    expect(await found('/v1/listings?minPrice=300000&maxPrice=1250000&sort=-listPrice')).toEqual(['farm', 'loft']);
    expect(await found('/v1/listings?city=dripping%20springs')).toEqual(['farm']);
    expect(await found('/v1/listings?stateOrProvince=TX&postalCode=78701&sort=listPrice')).toEqual(['cottage', 'loft']);
    expect(await found('/v1/listings?minBedrooms=2')).toEqual(['cottage']);
    expect(await found('/v1/listings?minBathrooms=1')).toEqual(['cottage']);
    expect(await found('/v1/listings?minLivingArea=1000')).toEqual(['loft']); // 100 m² ≈ 1076 ft²
    expect(await found('/v1/listings?near=30.27,-97.74&radiusKm=2&sort=listPrice')).toEqual(['cottage', 'loft']);
    expect(await found('/v1/listings?bbox=-98.2,30.1,-98,30.3')).toEqual(['farm']);
    expect(await found('/v1/listings?q=stone&sort=listPrice')).toEqual(['cottage', 'farm']);
    expect(await found('/v1/listings?q=open%20plan')).toEqual(['loft']);
    expect(await found('/v1/listings?source=test&externalId=farm')).toEqual(['farm']);
    expect(
      await found(`/v1/listings?updatedSince=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`),
    ).toEqual([]);
  });

  it('answers total, facets and the index time, and pages by cursor', async () => {
    const res = await get('/v1/listings?limit=2&sort=-listPrice&facets=status,propertyType,city');
    const timing = /^index;dur=(\d+\.\d), index-call;dur=(\d+\.\d)$/.exec(String(res.headers['server-timing']));
    expect(timing).not.toBeNull();
    // The whole call to the index holds the index's own time.
    expect(Number(timing![2])).toBeGreaterThanOrEqual(Number(timing![1]));
    const page = res.json();
    expect(page.items.map((l: { externalId: string }) => l.externalId)).toEqual(['farm', 'loft']);
    expect(page.total).toBe(3);
    expect(page.facets).toEqual({
      status: [
        { value: 'active', count: 2 },
        { value: 'pending', count: 1 },
      ],
      propertyType: [
        { value: 'residential', count: 2 },
        { value: 'farm', count: 1 },
      ],
      city: [
        { value: 'Austin', count: 2 },
        { value: 'Dripping Springs', count: 1 },
      ],
    });
    const next = (await get(`/v1/listings?limit=2&sort=-listPrice&cursor=${page.nextCursor}`)).json();
    expect(next).toEqual({ items: [expect.objectContaining({ externalId: 'cottage' })], nextCursor: null, total: 3 });
    // Without ?facets= the answer has no facets at all.
    expect((await get('/v1/listings')).json()).not.toHaveProperty('facets');
  });

  it('orders by relevance with q, newest first without it', async () => {
    await create('stone-house', {
      propertyDetails: { propertyType: 'residential', description: 'Stone house, stone walls, stone floors' },
    });
    await h.runtime.relay.flush();
    expect((await found('/v1/listings?q=stone'))[0]).toBe('stone-house');
    expect(await found('/v1/listings')).toEqual(['stone-house', 'farm', 'loft', 'cottage']);
  });

  it('reflects creates, updates and deletes, and rebuilds the index from the store at start', async () => {
    const id = await create('new', { pricing: { listPrice: 100 } });
    await h.runtime.relay.flush();
    expect(await found('/v1/listings?maxPrice=100')).toEqual(['new']);
    const patch = await h.call(alice, 'PATCH', `/v1/listings/${id}`, { pricing: { listPrice: 200 } });
    expect(patch.statusCode).toBe(200);
    await h.runtime.relay.flush();
    expect(await found('/v1/listings?maxPrice=150')).toEqual([]);
    expect(await found('/v1/listings?maxPrice=200')).toEqual(['new']);
    await h.call(alice, 'DELETE', `/v1/listings/${id}`);
    await h.runtime.relay.flush();
    expect(await found('/v1/listings?maxPrice=200')).toEqual([]);

    // A restart: a new process over the same data, with an index that starts empty.
    await h.restart();
    expect(await found('/v1/listings?sort=listPrice')).toEqual(['cottage', 'loft', 'farm']);
    expect((await get('/v1/listings', bob)).json().total).toBe(1);
  });

  it.each([
    ['minPrice above maxPrice', '/v1/listings?minPrice=5&maxPrice=1', 'minPrice'],
    ['radiusKm without near', '/v1/listings?radiusKm=5', 'radiusKm'],
    ['near without radiusKm', '/v1/listings?near=30,-97', 'radiusKm'],
    ['near that is not lat,lng', '/v1/listings?near=30&radiusKm=5', 'near'],
    ['near out of range', '/v1/listings?near=91,0&radiusKm=5', 'near'],
    ['bbox with three numbers', '/v1/listings?bbox=1,2,3', 'bbox'],
    ['bbox with words', '/v1/listings?bbox=a,b,c,d', 'bbox'],
    ['bbox upside down', '/v1/listings?bbox=0,10,1,5', 'bbox'],
    ['unknown sort', '/v1/listings?sort=price', 'sort'],
    ['distance order without near', '/v1/listings?sort=distance', 'sort'],
    ['unknown facet', '/v1/listings?facets=colour', 'facets.0'],
    ['updatedSince that is not a date', '/v1/listings?updatedSince=yesterday', 'updatedSince'],
    ['negative bedrooms', '/v1/listings?minBedrooms=-1', 'minBedrooms'],
    ['empty q', '/v1/listings?q=%20', 'q'],
    ['unknown parameter', '/v1/listings?colour=red', 'colour'],
  ])('refuses %s with 422 naming the parameter', async (_what, url, path) => {
    const res = await get(url);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({
      code: 'validation_failed',
      errors: expect.arrayContaining([expect.objectContaining({ path })]),
    });
  });

  it('orders by distance with near (nearest first unless told), gives each item its distance, and pages on', async () => {
    const near = '/v1/listings?near=30.27,-97.74&radiusKm=50';
    const res = await get(near);
    expect(res.statusCode).toBe(200);
    const items = res.json().items as Array<{ externalId: string; distanceKm: number }>;
    // The cottage stands on the point, the loft half a kilometre away, the farm past Dripping Springs.
    expect(items.map((l) => l.externalId)).toEqual(['cottage', 'loft', 'farm']);
    expect(items[0].distanceKm).toBe(0);
    expect(items[1].distanceKm).toBeCloseTo(0.5, 0);
    expect(items[2].distanceKm).toBeGreaterThan(30);
    expect(items[2].distanceKm).toBeLessThan(40);
    expect(await found(`${near}&sort=-distance`)).toEqual(['farm', 'loft', 'cottage']);
    const first = (await get(`${near}&sort=distance&limit=2`)).json();
    expect(first.items.map((l: { externalId: string }) => l.externalId)).toEqual(['cottage', 'loft']);
    expect(await found(`${near}&sort=distance&limit=2&cursor=${encodeURIComponent(first.nextCursor)}`)).toEqual([
      'farm',
    ]);
    // Without near there is no distance to give.
    expect((await get('/v1/listings?sort=listPrice')).json().items[0]).not.toHaveProperty('distanceKm');
  });

  it('refuses a cursor it did not issue, or one made for another order, with 400 invalid_cursor', async () => {
    const { nextCursor } = (await get('/v1/listings?limit=1&sort=listPrice')).json();
    const [, tag] = (nextCursor as string).split('.');
    const forged = Buffer.from('{"v":{"$ne":null},"id":"x"}').toString('base64url');
    for (const cursor of [
      'nonsense',
      Buffer.from('{"v":1}').toString('base64url'),
      forged,
      `${forged}.${tag}`,
      nextCursor,
    ]) {
      const res = await get(`/v1/listings?limit=1&sort=-updatedAt&cursor=${cursor}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('invalid_cursor');
    }
  });
});
