import type { Listing } from '@estate/contracts/listings';
import type { IndexedListing, ListingFilters, ListingIndex, ListingSearch, ListingSort } from '../src/listing-index';

export interface IndexHarness {
  /** A new, empty index (not yet opened). */
  open(): Promise<ListingIndex>;
  cleanup?(): Promise<void>;
}

const ACCOUNT = 'acc_a';
const OTHER = 'acc_b';
/** Listings for the word-matching test, apart from the seven. */
const TEXT = 'acc_text';

interface Spec {
  price: number;
  status?: Listing['status'];
  type?: Listing['propertyDetails']['propertyType'];
  city?: string;
  state?: string;
  postal?: string;
  beds?: number;
  baths?: number;
  area?: number;
  units?: 'sqft' | 'sqm';
  at?: [number, number];
  listedAt?: string | null;
  updatedAt: string;
  createdAt: string;
  description?: string;
  features?: string[];
  version?: number;
}

/** A listing as the index is given it, made from the few values a test cares about. */
export function listing(id: string, s: Spec): Listing {
  return {
    id,
    status: s.status ?? 'active',
    pricing: {
      listPrice: s.price,
      currency: 'USD',
      pricePerArea: s.area ? Math.round((s.price / s.area) * 100) / 100 : null,
    },
    propertyDetails: {
      propertyType: s.type ?? 'residential',
      livingAreaUnits: s.units ?? 'sqft',
      ...(s.beds !== undefined ? { bedrooms: s.beds } : {}),
      ...(s.baths !== undefined ? { bathrooms: s.baths } : {}),
      ...(s.area !== undefined ? { livingArea: s.area } : {}),
      ...(s.description !== undefined ? { description: s.description } : {}),
      ...(s.features ? { features: s.features } : {}),
    },
    location: {
      address: {
        street: `${id.slice(4)} Main St`,
        city: s.city ?? 'Austin',
        stateOrProvince: s.state ?? 'TX',
        postalCode: s.postal ?? '78701',
        country: 'US',
      },
      ...(s.at ? { latitude: s.at[0], longitude: s.at[1] } : {}),
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: s.listedAt ?? null,
    version: s.version ?? 1,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}

/** Seven listings of one account chosen so that every filter, sort and tie has something to decide. */
const A = listing('lst_a', {
  price: 300000,
  beds: 3,
  baths: 2,
  area: 1800,
  at: [30.2672, -97.7431],
  listedAt: '2024-01-10T00:00:00.000Z',
  updatedAt: '2024-03-01T00:00:00.000Z',
  createdAt: '2024-01-01T00:00:00.000Z',
  description: 'Bright family home with an open-plan kitchen near the park',
  features: ['garage', 'pool'],
});
const B = listing('lst_b', {
  price: 450000,
  status: 'pending',
  postal: '78704',
  beds: 4,
  baths: 2.5,
  area: 200,
  units: 'sqm',
  at: [30.25, -97.76],
  listedAt: '2024-02-01T00:00:00.000Z',
  updatedAt: '2024-03-05T00:00:00.000Z',
  createdAt: '2024-01-02T00:00:00.000Z',
  description: 'Renovated craftsman bungalow on a quiet street',
  features: ['fireplace'],
});
const C = listing('lst_c', {
  price: 300000,
  type: 'land',
  city: 'Round Rock',
  postal: '78664',
  at: [30.5083, -97.6789],
  updatedAt: '2024-02-20T00:00:00.000Z',
  createdAt: '2024-01-03T00:00:00.000Z',
  description: 'Five acre lot with a river view',
});
const D = listing('lst_d', {
  price: 1200000,
  status: 'closed',
  type: 'commercial_sale',
  city: 'Dallas',
  postal: '75201',
  beds: 0,
  baths: 1,
  area: 5000,
  at: [32.7767, -96.797],
  listedAt: '2023-12-01T00:00:00.000Z',
  updatedAt: '2024-01-15T00:00:00.000Z',
  createdAt: '2024-01-04T00:00:00.000Z',
  description: 'Downtown office building',
  features: ['parking'],
});
const E = listing('lst_e', {
  price: 650000,
  beds: 5,
  baths: 3.5,
  area: 3200,
  updatedAt: '2024-03-10T00:00:00.000Z',
  createdAt: '2024-01-05T00:00:00.000Z',
  description: 'Family house with a pool and a big garden; the pool house is included',
  features: ['pool', 'garden'],
});
const F = listing('lst_f', {
  price: 99000,
  status: 'withdrawn',
  type: 'manufactured_in_park',
  city: 'Suva',
  state: 'Central',
  postal: 'FJ1',
  beds: 2,
  baths: 1,
  area: 900,
  at: [-18.1416, 178.4419],
  listedAt: '2024-01-20T00:00:00.000Z',
  updatedAt: '2024-02-01T00:00:00.000Z',
  createdAt: '2024-01-06T00:00:00.000Z',
  description: 'Harbour view cottage',
});
const G = listing('lst_g', {
  price: 150000,
  type: 'land',
  city: 'Labasa',
  state: 'Northern',
  postal: 'FJ2',
  at: [-16.43, -179.5],
  listedAt: '2024-01-25T00:00:00.000Z',
  updatedAt: '2024-02-02T00:00:00.000Z',
  createdAt: '2024-01-07T00:00:00.000Z',
  description: 'Beach lot across the date line',
});
/** Another account's copy of A: never in ACCOUNT's results. */
const H = { ...A, id: 'lst_h' };

const ALL = [A, B, C, D, E, F, G];
const mine = (l: Listing): IndexedListing => ({ accountId: ACCOUNT, listing: l });
const ids = (list: Listing[]): string[] => list.map((l) => l.id.slice(4));

/** Haversine on Elasticsearch's mean Earth radius, written out here rather than taken from the code under test. */
function arcKm(from: { lat: number; lng: number }, to: Listing): number {
  const rad = Math.PI / 180;
  const [lat, lng] = [to.location.latitude!, to.location.longitude!];
  const h =
    Math.sin(((lat - from.lat) * rad) / 2) ** 2 +
    Math.cos(from.lat * rad) * Math.cos(lat * rad) * Math.sin(((lng - from.lng) * rad) / 2) ** 2;
  return 2 * 6371.0087714 * Math.asin(Math.sqrt(h));
}

/** The behaviour every search-index adapter must show, with the same answers for the same data. */
export function listingIndexContract(name: string, harness: () => IndexHarness) {
  describe(`listing index contract: ${name}`, () => {
    let h: IndexHarness;
    let index: ListingIndex;

    const search = (over: Partial<ListingSearch> = {}) =>
      index.search({
        accountId: ACCOUNT,
        filters: {},
        sort: { by: 'listPrice', direction: 'asc' },
        limit: 50,
        facets: [],
        ...over,
      });
    const found = async (filters: ListingFilters, sort?: ListingSort) =>
      ids((await search({ filters, ...(sort ? { sort } : {}) })).items).join(',');
    const write = async (fn: () => Promise<void>) => {
      await fn();
      await index.refresh();
    };
    const seed = () => write(() => index.upsert([...ALL.map(mine), { accountId: OTHER, listing: H }]));

    beforeEach(async () => {
      h = harness();
      index = await h.open();
      expect(await index.open()).toEqual({ created: true });
    });
    afterEach(async () => {
      await index.close();
      await h.cleanup?.();
    });

    it("answers the full listing documents of the caller's account only, with the total", async () => {
      await seed();
      const page = await search();
      expect(page.items).toEqual([F, G, A, C, B, E, D]);
      expect(page.total).toBe(7);
      expect(page.next).toBeNull();
      expect(page.tookMs).toBeGreaterThanOrEqual(0);
      expect(
        (
          await index.search({
            accountId: OTHER,
            filters: {},
            sort: { by: 'listPrice', direction: 'asc' },
            limit: 10,
            facets: [],
          })
        ).items,
      ).toEqual([H]);
      expect(
        (
          await index.search({
            accountId: 'acc_nobody',
            filters: {},
            sort: { by: 'createdAt', direction: 'desc' },
            limit: 10,
            facets: [],
          })
        ).total,
      ).toBe(0);
    });

    it.each<[string, ListingFilters, string]>([
      ['price bounds, inclusive', { minPrice: 300000 }, 'a,c,b,e,d'],
      ['max price, inclusive', { maxPrice: 300000 }, 'f,g,a,c'],
      ['a price band', { minPrice: 300000, maxPrice: 650000 }, 'a,c,b,e'],
      ['one status', { status: ['active'] }, 'g,a,c,e'],
      ['several statuses', { status: ['pending', 'closed'] }, 'b,d'],
      ['one property type', { propertyType: ['land'] }, 'g,c'],
      ['several property types', { propertyType: ['residential', 'commercial_sale'] }, 'a,b,e,d'],
      ['city, whatever the case', { city: 'AUSTIN' }, 'a,b,e'],
      ['city with a space', { city: 'round rock' }, 'c'],
      ['city as a whole value, not a prefix', { city: 'Round' }, ''],
      ['state', { stateOrProvince: 'tx' }, 'a,c,b,e,d'],
      ['postal code', { postalCode: '78701' }, 'a,e'],
      ['bedrooms (listings without any are out)', { minBedrooms: 4 }, 'b,e'],
      ['no bedrooms asked for still needs a count', { minBedrooms: 0 }, 'f,a,b,e,d'],
      ['bathrooms', { minBathrooms: 2.5 }, 'b,e'],
      ['living area in square feet, square metres converted (200 m² = 2152.8 ft²)', { minLivingArea: 2152 }, 'b,e,d'],
      ['living area just above the converted one', { minLivingArea: 2153 }, 'e,d'],
      ['updated since, inclusive', { updatedSince: Date.parse('2024-03-01T00:00:00.000Z') }, 'a,b,e'],
      ['near, small radius', { near: { lat: 30.2672, lng: -97.7431, radiusKm: 5 } }, 'a,b'],
      ['near, larger radius', { near: { lat: 30.2672, lng: -97.7431, radiusKm: 40 } }, 'a,c,b'],
      ['bounding box', { bbox: { minLng: -97.8, minLat: 30.2, maxLng: -97.7, maxLat: 30.3 } }, 'a,b'],
      [
        'bounding box across the antimeridian',
        { bbox: { minLng: 178, minLat: -19, maxLng: -179, maxLat: -16 } },
        'f,g',
      ],
      ['bounding box west of the antimeridian', { bbox: { minLng: 170, minLat: -19, maxLng: 179, maxLat: -16 } }, 'f'],
      ['full text in features', { q: 'pool' }, 'a,e'],
      ['full text: every word must match, case ignored', { q: 'POOL garden' }, 'e'],
      ['full text: words split at hyphens', { q: 'plan' }, 'a'],
      ['full text over the address', { q: 'austin' }, 'a,b,e'],
      ['full text over the postal code', { q: '78664' }, 'c'],
      ['full text with no listing holding both words', { q: 'pool fireplace' }, ''],
      ['full text of punctuation only', { q: '--' }, ''],
      ['filters combined', { status: ['active'], q: 'pool', maxPrice: 700000 }, 'a,e'],
      ['geo and price combined', { near: { lat: 30.2672, lng: -97.7431, radiusKm: 40 }, minPrice: 400000 }, 'b'],
    ])('filters: %s', async (_what, filters, expected) => {
      await seed();
      expect(await found(filters)).toBe(expected);
    });

    it.each<[ListingSort, string]>([
      [{ by: 'listPrice', direction: 'asc' }, 'f,g,a,c,b,e,d'],
      [{ by: 'listPrice', direction: 'desc' }, 'd,e,b,c,a,g,f'],
      [{ by: 'listedAt', direction: 'asc' }, 'd,a,f,g,b,c,e'],
      [{ by: 'listedAt', direction: 'desc' }, 'b,g,f,a,d,e,c'],
      [{ by: 'updatedAt', direction: 'desc' }, 'e,b,a,c,g,f,d'],
      [{ by: 'updatedAt', direction: 'asc' }, 'd,f,g,c,a,b,e'],
      [{ by: 'createdAt', direction: 'asc' }, 'a,b,c,d,e,f,g'],
      [{ by: 'createdAt', direction: 'desc' }, 'g,f,e,d,c,b,a'],
    ])('sorts by %j, ties by id, listings without the value last', async (sort, expected) => {
      await seed();
      expect(await found({}, sort)).toBe(expected);
      // Page by page, two at a time, the same order comes out, across the listings without a value too.
      const seen: string[] = [];
      let after: ListingSearch['after'];
      for (let pages = 0; pages < 10; pages++) {
        const page = await search({ sort, limit: 2, ...(after ? { after } : {}) });
        expect(page.total).toBe(7);
        seen.push(...ids(page.items));
        if (!page.next) break;
        after = page.next;
      }
      expect(seen.join(',')).toBe(expected);
    });

    it('ranks by relevance with q: more occurrences in a short text first, ties by id, and pages by score', async () => {
      await seed();
      expect(await found({ q: 'pool' }, { by: 'relevance' })).toBe('e,a');
      const first = await search({ filters: { q: 'austin' }, sort: { by: 'relevance' }, limit: 2 });
      expect(first.total).toBe(3);
      expect(first.next).not.toBeNull();
      const second = await search({
        filters: { q: 'austin' },
        sort: { by: 'relevance' },
        limit: 2,
        after: first.next!,
      });
      expect([...ids(first.items), ...ids(second.items)].sort()).toEqual(['a', 'b', 'e']);
      expect(second.next).toBeNull();
    });

    it('returns every listing exactly once while listings are added, removed and changed between pages', async () => {
      await seed();
      const sort: ListingSort = { by: 'listPrice', direction: 'asc' };
      const first = await search({ sort, limit: 2 });
      expect(ids(first.items)).toEqual(['f', 'g']);
      await write(async () => {
        await index.upsert([
          mine(
            listing('lst_n', {
              price: 50000,
              updatedAt: '2024-04-01T00:00:00.000Z',
              createdAt: '2024-04-01T00:00:00.000Z',
            }),
          ), // before the cursor: not on a later page
          mine(
            listing('lst_m', {
              price: 500000,
              updatedAt: '2024-04-01T00:00:00.000Z',
              createdAt: '2024-04-01T00:00:00.000Z',
            }),
          ), // after it: on a later page
          mine({ ...A, version: 2, propertyDetails: { ...A.propertyDetails, description: 'Repainted' } }),
          mine({
            ...F,
            version: 2,
            propertyDetails: { ...F.propertyDetails, description: 'Seen already, changed since' },
          }),
        ]);
        await index.remove([{ id: 'lst_c', version: 2 }]);
      });
      const seen = ids(first.items);
      let after = first.next;
      while (after) {
        const page = await search({ sort, limit: 2, after });
        seen.push(...ids(page.items));
        after = page.next;
      }
      expect(seen).toEqual(['f', 'g', 'a', 'b', 'm', 'e', 'd']);
    });

    it('counts facets over every match, most frequent first and ties by value, whatever the page size', async () => {
      await seed();
      const all = await search({ limit: 1, facets: ['status', 'propertyType', 'city'] });
      expect(all.items).toHaveLength(1);
      expect(all.facets).toEqual({
        status: [
          { value: 'active', count: 4 },
          { value: 'closed', count: 1 },
          { value: 'pending', count: 1 },
          { value: 'withdrawn', count: 1 },
        ],
        propertyType: [
          { value: 'residential', count: 3 },
          { value: 'land', count: 2 },
          { value: 'commercial_sale', count: 1 },
          { value: 'manufactured_in_park', count: 1 },
        ],
        city: [
          { value: 'Austin', count: 3 },
          { value: 'Dallas', count: 1 },
          { value: 'Labasa', count: 1 },
          { value: 'Round Rock', count: 1 },
          { value: 'Suva', count: 1 },
        ],
      });
      const filtered = await search({ filters: { minPrice: 300000, q: 'austin' }, limit: 1, facets: ['city'] });
      expect(filtered.total).toBe(3);
      expect(filtered.facets).toEqual({ city: [{ value: 'Austin', count: 3 }] });
      expect((await search({ filters: { city: 'nowhere' }, facets: ['status'] })).facets).toEqual({ status: [] });
      expect((await search()).facets).toEqual({});
    });

    it('counts the total and facets of a price range alone, and of status, type and city alone, over every match', async () => {
      await seed();
      const facets = ['status', 'propertyType', 'city'] as const;
      /** The expected answer, counted here from the seven listings. */
      const expected = (keep: (l: Listing) => boolean) => {
        const matches = ALL.filter(keep);
        const count = (value: (l: Listing) => string) => {
          const n = new Map<string, number>();
          for (const l of matches) n.set(value(l), (n.get(value(l)) ?? 0) + 1);
          return [...n].sort(([a, m], [b, k]) => k - m || (a < b ? -1 : 1)).map(([value, count]) => ({ value, count }));
        };
        return {
          total: matches.length,
          facets: {
            status: count((l) => l.status),
            propertyType: count((l) => l.propertyDetails.propertyType),
            city: count((l) => l.location.address.city),
          },
        };
      };
      const price = (l: Listing) => l.pricing.listPrice;
      const cases: Array<[ListingFilters, (l: Listing) => boolean]> = [
        [{ minPrice: 100000 }, (l) => price(l) >= 100000],
        [{ minPrice: 99000 }, (l) => price(l) >= 99000],
        [{ maxPrice: 650000 }, (l) => price(l) <= 650000],
        [{ maxPrice: 649999 }, (l) => price(l) <= 649999],
        [{ minPrice: 150000, maxPrice: 650000 }, (l) => price(l) >= 150000 && price(l) <= 650000],
        [{ minPrice: 300000, maxPrice: 300000 }, (l) => price(l) === 300000],
        [{ minPrice: 1, maxPrice: 2000000 }, () => true],
        [{ status: ['active', 'pending'] }, (l) => l.status === 'active' || l.status === 'pending'],
        [{ city: 'AUSTIN' }, (l) => l.location.address.city === 'Austin'],
        [
          { propertyType: ['land'], city: 'round rock' },
          (l) => l.propertyDetails.propertyType === 'land' && l.location.address.city === 'Round Rock',
        ],
        [
          { status: ['active'], propertyType: ['residential', 'land'] },
          (l) => l.status === 'active' && ['residential', 'land'].includes(l.propertyDetails.propertyType),
        ],
      ];
      for (const [filters, keep] of cases) {
        const page = await search({ filters, limit: 1, facets: [...facets] });
        expect({ filters, total: page.total, facets: page.facets }).toEqual({ filters, ...expected(keep) });
      }
    });

    it("sorts by distance from near either way, reports every hit's distance, and pages by it", async () => {
      await seed();
      const near = { lat: 30.2672, lng: -97.7431, radiusKm: 40 };
      const km = (l: Listing) => arcKm(near, l);
      const nearest = await search({ filters: { near }, sort: { by: 'distance', direction: 'asc' } });
      expect(ids(nearest.items)).toEqual(['a', 'b', 'c']);
      expect(nearest.items.map((i) => i.distanceKm)).toEqual([
        expect.closeTo(0, 3),
        expect.closeTo(km(B), 3),
        expect.closeTo(km(C), 3),
      ]);
      expect(ids((await search({ filters: { near }, sort: { by: 'distance', direction: 'desc' } })).items)).toEqual([
        'c',
        'b',
        'a',
      ]);

      const first = await search({ filters: { near }, sort: { by: 'distance', direction: 'asc' }, limit: 2 });
      expect(first.total).toBe(3);
      expect(first.next?.value).toBeCloseTo(km(B), 3);
      const second = await search({
        filters: { near },
        sort: { by: 'distance', direction: 'asc' },
        limit: 2,
        after: first.next!,
      });
      expect(ids(second.items)).toEqual(['c']);
      expect(second.next).toBeNull();

      // Another order still reports the distance; a search without near does not.
      const byPrice = await search({ filters: { near, minPrice: 400000 } });
      expect(byPrice.items).toEqual([{ ...B, distanceKm: expect.closeTo(km(B), 3) }]);
      expect((await search()).items[0]).not.toHaveProperty('distanceKm');
    });

    it('combines bounding boxes with other filters, sorts, pages and facets', async () => {
      await seed();
      const texas = { minLng: -98, minLat: 30, maxLng: -96, maxLat: 33 };
      const page = await search({
        filters: { bbox: texas },
        sort: { by: 'listPrice', direction: 'desc' },
        limit: 3,
        facets: ['city'],
      });
      expect(ids(page.items)).toEqual(['d', 'b', 'c']);
      expect(page.total).toBe(4);
      expect(page.facets).toEqual({
        city: [
          { value: 'Austin', count: 2 },
          { value: 'Dallas', count: 1 },
          { value: 'Round Rock', count: 1 },
        ],
      });
      const rest = await search({
        filters: { bbox: texas },
        sort: { by: 'listPrice', direction: 'desc' },
        limit: 3,
        after: page.next!,
      });
      expect(ids(rest.items)).toEqual(['a']);
      expect(await found({ bbox: texas, q: 'pool' })).toBe('a');
      expect(await found({ bbox: texas, near: { lat: 30.2672, lng: -97.7431, radiusKm: 5 } })).toBe('a,b');
      expect(await found({ bbox: { minLng: 178, minLat: -19, maxLng: -179, maxLat: -16 }, status: ['active'] })).toBe(
        'g',
      );
      // An item found inside a box has no distance to report: no near point was given.
      expect(page.items[0]).not.toHaveProperty('distanceKm');
    });

    it('matches words as the adapter declares: exact words, or stems with the last word as a prefix', async () => {
      const text = (id: string, price: number, description: string) => ({
        accountId: TEXT,
        listing: listing(id, { price, description, updatedAt: A.updatedAt, createdAt: A.createdAt }),
      });
      await write(() =>
        index.upsert([
          text('lst_t1', 1, 'Two pools and a sauna'),
          text('lst_t2', 2, 'Pool table in the basement'),
          text('lst_t3', 3, 'Poolside cabana with a garden'),
        ]),
      );
      const words = async (q: string) => ids((await search({ accountId: TEXT, filters: { q } })).items).join(',');
      if (index.textMatching === 'stemmed') {
        expect(await words('pool sauna')).toBe('t1');
        expect(await words('pools table')).toBe('t2');
        expect(await words('pool')).toBe('t1,t2,t3');
        expect(await words('basem')).toBe('t2');
        expect(await words('garden cab')).toBe('t3');
        expect(await words('cab garden')).toBe('');
      } else {
        expect(await words('pool sauna')).toBe('');
        expect(await words('pools sauna')).toBe('t1');
        expect(await words('pool')).toBe('t2');
        expect(await words('basem')).toBe('');
      }
    });

    it('never lets an older version overwrite a newer one, nor bring back a removed listing', async () => {
      const v = (price: number, version: number) =>
        mine({ ...A, version, pricing: { ...A.pricing, listPrice: price } });
      await write(() => index.upsert([v(310000, 3)]));
      await write(() => index.upsert([v(320000, 2)]));
      await write(() => index.upsert([v(310000, 3)])); // the same event again
      expect((await search()).items).toEqual([v(310000, 3).listing]);

      await write(() => index.remove([{ id: 'lst_a', version: 3 }])); // not newer than what is indexed: ignored
      expect((await search()).total).toBe(1);
      await write(() => index.remove([{ id: 'lst_a', version: 4 }]));
      expect((await search()).total).toBe(0);
      await write(() => index.upsert([v(330000, 3)]));
      expect((await search()).total).toBe(0);

      // A removal that arrives before the listing it removes.
      await write(() => index.remove([{ id: 'lst_z', version: 2 }]));
      await write(() =>
        index.upsert([mine(listing('lst_z', { price: 1, updatedAt: A.updatedAt, createdAt: A.createdAt }))]),
      );
      expect((await search()).total).toBe(0);
      expect((await search({ accountId: OTHER })).total).toBe(0);
    });

    it('shows a change written as visible to the very next search, without a refresh', async () => {
      const v = (price: number, version: number) =>
        mine({ ...A, version, pricing: { ...A.pricing, listPrice: price } });
      await index.upsert([v(310000, 1)], { visible: true });
      expect((await search()).items).toEqual([v(310000, 1).listing]);
      await index.upsert([v(320000, 2)], { visible: true });
      expect((await search()).items).toEqual([v(320000, 2).listing]);
      // The same version written a moment before by another writer (the events' indexer), not yet visible there.
      await index.upsert([mine(B)]);
      await index.upsert([mine(B)], { visible: true });
      expect(ids((await search()).items)).toEqual(['a', 'b']);
      await index.remove([{ id: 'lst_a', version: 3 }], { visible: true });
      expect(ids((await search()).items)).toEqual(['b']);
    });

    it('shows each of many visible writes made at once to the search made when it resolves', async () => {
      const many = Array.from({ length: 12 }, (_, i) =>
        mine(
          listing(`lst_m${String(i).padStart(2, '0')}`, {
            price: 200000 + i,
            updatedAt: A.updatedAt,
            createdAt: A.createdAt,
          }),
        ),
      );
      const seen = await Promise.all(
        many.map(async (item) => {
          await index.upsert([item], { visible: true });
          return ids((await search()).items).includes(item.listing.id.slice(4));
        }),
      );
      expect(seen).toEqual(many.map(() => true));
    });

    it('replaces everything at once from a full read, and lists what it holds by id', async () => {
      await seed();
      await write(() => index.remove([{ id: 'lst_b', version: 2 }]));
      async function* read() {
        yield [mine(A), mine({ ...D, version: 3 })];
        yield [{ accountId: OTHER, listing: H }];
      }
      expect(await index.replaceAll(read)).toEqual({ indexed: 3 });
      expect(ids((await search()).items)).toEqual(['a', 'd']);
      const listed: Array<{ id: string; version: number }> = [];
      for await (const batch of index.scanIds()) listed.push(...batch);
      expect(listed).toEqual([
        { id: 'lst_a', version: 1 },
        { id: 'lst_d', version: 3 },
        { id: 'lst_h', version: 1 },
      ]);
      // Versions still hold after the replacement.
      await write(() => index.upsert([mine({ ...D, version: 2, status: 'active' })]));
      expect((await search({ filters: { status: ['closed'] } })).items).toEqual([{ ...D, version: 3 }]);
      await index.ping();
    });
  });
}
