import { describeWithEngines, eventually, listingBody } from '@estate/testing';
import { apiClient, startCluster, type Api, type Cluster } from './harness';

/**
 * Tier 3: listing search in the distributed profile. Listings written through the gateway reach
 * Elasticsearch over NATS (outbox, JetStream, the listings service's indexer) and are searched
 * through the gateway again.
 */
describeWithEngines(
  'listing search through the gateway (separate processes, MongoDB, NATS, Elasticsearch)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let api: Api;
    const ids = (page: { items: Array<{ id: string }> }) => page.items.map((l) => l.id);

    beforeAll(async () => {
      cluster = await startCluster({ name: 'syssearch', engines: urls, keys: { platform: false }, logLevel: 'warn' });
      api = apiClient(cluster.gateway, cluster.keys.admin);
    }, 90_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('finds listings by filters, geo, full text and facets, follows changes, and refuses bad parameters', async () => {
      const made = [
        listingBody({
          pricing: { listPrice: 350000 },
          propertyDetails: {
            propertyType: 'residential',
            bedrooms: 3,
            description: 'Sunny bungalow with a saltwater pool',
          },
        }),
        listingBody({
          status: 'pending',
          pricing: { listPrice: 520000 },
          location: {
            address: { street: '9 Oak Ave', city: 'Round Rock', stateOrProvince: 'TX', postalCode: '78664' },
            latitude: 30.5083,
            longitude: -97.6789,
          },
        }),
        listingBody({
          pricing: { listPrice: 910000 },
          propertyDetails: { propertyType: 'land', description: 'Ranch land by the river' },
          location: {
            address: { street: 'FM 1431', city: 'Austin', stateOrProvince: 'TX', postalCode: '78734' },
            latitude: 30.42,
            longitude: -97.9,
          },
        }),
      ];
      const created: string[] = [];
      for (const body of made) {
        const res = await api('POST', '/v1/listings', body);
        expect(res.status).toBe(201);
        created.push(res.body.id);
      }
      const [bungalow, roundRock, ranch] = created;

      const all = await eventually(async () => {
        const res = await api('GET', '/v1/listings?sort=listPrice&facets=status,city');
        expect(res.body.total).toBe(3);
        return res;
      });
      expect(all.status).toBe(200);
      expect(ids(all.body)).toEqual([bungalow, roundRock, ranch]);
      expect(all.body.items[0]).toEqual((await api('GET', `/v1/listings/${bungalow}`)).body);
      expect(all.body.facets).toEqual({
        status: [
          { value: 'active', count: 2 },
          { value: 'pending', count: 1 },
        ],
        city: [
          { value: 'Austin', count: 2 },
          { value: 'Round Rock', count: 1 },
        ],
      });
      expect(all.headers.get('server-timing')).toMatch(/^index;dur=\d+(\.\d)?, index-call;dur=\d+\.\d$/);

      expect(ids((await api('GET', '/v1/listings?q=pool')).body)).toEqual([bungalow]);
      expect(ids((await api('GET', '/v1/listings?near=30.27,-97.74&radiusKm=10')).body)).toEqual([bungalow]);
      expect(ids((await api('GET', '/v1/listings?bbox=-98,30.3,-97.5,30.6&sort=-listPrice')).body)).toEqual([
        ranch,
        roundRock,
      ]);
      expect(ids((await api('GET', '/v1/listings?status=active&minPrice=400000')).body)).toEqual([ranch]);
      expect(ids((await api('GET', '/v1/listings?city=round%20rock&propertyType=residential')).body)).toEqual([
        roundRock,
      ]);

      const first = (await api('GET', '/v1/listings?sort=-listPrice&limit=2')).body;
      expect(ids(first)).toEqual([ranch, roundRock]);
      const second = (await api('GET', `/v1/listings?sort=-listPrice&limit=2&cursor=${first.nextCursor}`)).body;
      expect(second).toMatchObject({ total: 3, nextCursor: null });
      expect(ids(second)).toEqual([bungalow]);

      expect((await api('PATCH', `/v1/listings/${ranch}`, { pricing: { listPrice: 200000 } })).status).toBe(200);
      expect((await api('DELETE', `/v1/listings/${roundRock}`)).status).toBe(200);
      await eventually(async () =>
        expect(ids((await api('GET', '/v1/listings?sort=listPrice')).body)).toEqual([ranch, bungalow]),
      );

      const bad = await api('GET', '/v1/listings?minPrice=5&maxPrice=1&radiusKm=3');
      expect(bad.status).toBe(422);
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['minPrice', 'radiusKm']);
      expect((await api('GET', '/v1/listings?bbox=1,2,3')).body.errors).toEqual([
        { path: 'bbox', message: expect.stringMatching(/4 numbers/) },
      ]);
      const cursor = await api('GET', '/v1/listings?cursor=bm9wZQ');
      expect(cursor.status).toBe(400);
      expect(cursor.body.code).toBe('invalid_cursor');
    }, 60_000);
  },
);
