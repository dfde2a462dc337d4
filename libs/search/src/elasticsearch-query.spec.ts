import type { ListingSearch } from './listing-index';
import { filterClauses, searchRequest, searchResult } from './elasticsearch-query';

const base: ListingSearch = {
  accountId: 'acc_1',
  filters: {},
  sort: { by: 'listPrice', direction: 'asc' },
  limit: 20,
  facets: [],
};

describe('listing search to Elasticsearch', () => {
  it('always scopes to the account, and translates each filter to one clause', () => {
    expect(filterClauses('acc_1', {})).toEqual([{ term: { accountId: 'acc_1' } }]);
    expect(
      filterClauses('acc_1', {
        status: ['active', 'pending'],
        city: ' Round Rock ',
        postalCode: 'SW1A 1AA',
        minPrice: 1,
        maxPrice: 2,
        minLivingArea: 1000,
        updatedSince: 1700000000000,
        near: { lat: 30.2, lng: -97.7, radiusKm: 2.5 },
        bbox: { minLng: 170, minLat: -20, maxLng: -170, maxLat: -10 },
      }),
    ).toEqual([
      { term: { accountId: 'acc_1' } },
      { terms: { status: ['active', 'pending'] } },
      { term: { cityKey: 'round rock' } },
      { term: { postalKey: 'sw1a 1aa' } },
      { range: { listPrice: { gte: 1, lte: 2 } } },
      { range: { livingAreaSqft: { gte: 1000 } } },
      { range: { updatedAt: { gte: 1700000000000, format: 'epoch_millis' } } },
      { geo_distance: { distance: '2500m', location: { lat: 30.2, lon: -97.7 } } },
      // Left edge east of the right edge: the box crosses the antimeridian, as Elasticsearch reads it.
      { geo_bounding_box: { location: { top_left: { lat: -10, lon: 170 }, bottom_right: { lat: -20, lon: -170 } } } },
    ]);
  });

  it('needs every word of q, asks one more hit than the page to know about the next, and counts exactly', () => {
    const req = searchRequest({ ...base, filters: { q: 'pool house' }, sort: { by: 'relevance' }, facets: ['city'] });
    expect(req.query).toEqual({
      bool: {
        filter: [{ term: { accountId: 'acc_1' } }],
        must: [{ match: { searchText: { query: 'pool house', operator: 'and' } } }],
      },
    });
    expect(req).toMatchObject({
      size: 21,
      track_total_hits: true,
      sort: [{ _score: { order: 'desc' } }, { listingId: { order: 'asc' } }],
      aggs: { city: { terms: { field: 'city', size: 50 } } },
    });
    expect(req).not.toHaveProperty('search_after');
  });

  it('sorts missing values last either way with values a JavaScript number carries exactly, and continues after them', () => {
    const asc = searchRequest({
      ...base,
      sort: { by: 'listedAt', direction: 'asc' },
      after: { value: null, id: 'lst_b' },
    });
    expect(asc.sort).toEqual([{ listedAt: { order: 'asc', missing: 8.64e15 } }, { listingId: { order: 'asc' } }]);
    expect(asc.search_after).toEqual([8.64e15, 'lst_b']);
    const desc = searchRequest({
      ...base,
      sort: { by: 'listedAt', direction: 'desc' },
      after: { value: 1700000000000, id: 'lst_b' },
    });
    expect(desc.sort).toEqual([{ listedAt: { order: 'desc', missing: -8.64e15 } }, { listingId: { order: 'desc' } }]);
    expect(desc.search_after).toEqual([1700000000000, 'lst_b']);
  });

  it('reads a page back: items from the source, the next position from the last item, null for a missing value', () => {
    const hit = (id: string, sort: unknown[]) => ({ _index: 'i', _id: id, _source: { listing: { id } }, sort });
    const response = {
      took: 3,
      timed_out: false,
      _shards: { total: 1, successful: 1, failed: 0 },
      hits: {
        total: { value: 9, relation: 'eq' },
        hits: [hit('lst_a', [5, 'lst_a']), hit('lst_b', [-8.64e15, 'lst_b']), hit('lst_c', [-8.64e15, 'lst_c'])],
      },
      aggregations: { status: { buckets: [{ key: 'active', doc_count: 7 }] } },
    };
    const search: ListingSearch = {
      ...base,
      limit: 2,
      sort: { by: 'listedAt', direction: 'desc' },
      facets: ['status'],
    };
    expect(searchResult(search, response as never)).toEqual({
      items: [{ id: 'lst_a' }, { id: 'lst_b' }],
      total: 9,
      next: { value: null, id: 'lst_b' },
      facets: { status: [{ value: 'active', count: 7 }] },
      tookMs: 3,
    });
    expect(searchResult({ ...search, limit: 3 }, response as never).next).toBeNull();
  });
});

describe('distance from near in Elasticsearch', () => {
  const near = { lat: 30.2672, lng: -97.7431, radiusKm: 40 };

  it('sorts by arc distance in kilometres, ties by id, and continues after the last distance', () => {
    const req = searchRequest({
      ...base,
      filters: { near },
      sort: { by: 'distance', direction: 'asc' },
      after: { value: 2.5, id: 'lst_b' },
    });
    expect(req.sort).toEqual([
      { _geo_distance: { location: { lat: 30.2672, lon: -97.7431 }, order: 'asc', unit: 'km', distance_type: 'arc' } },
      { listingId: { order: 'asc' } },
    ]);
    expect(req.search_after).toEqual([2.5, 'lst_b']);
    expect(() => searchRequest({ ...base, sort: { by: 'distance', direction: 'asc' } })).toThrow('near');
  });

  it("reports each hit's distance from the point, computed from the listing", () => {
    const at = (id: string, latitude: number, longitude: number) => ({ id, location: { latitude, longitude } });
    const response = {
      took: 1,
      timed_out: false,
      _shards: { total: 1, successful: 1, failed: 0 },
      hits: {
        total: { value: 1, relation: 'eq' },
        hits: [{ _index: 'i', _id: 'lst_a', _source: { listing: at('lst_a', 30.2672, -97.7431) }, sort: [0, 'lst_a'] }],
      },
    };
    const result = searchResult(
      { ...base, filters: { near }, sort: { by: 'distance', direction: 'asc' } },
      response as never,
    );
    expect(result.items).toEqual([{ ...at('lst_a', 30.2672, -97.7431), distanceKm: 0 }]);
  });
});
