import type { estypes } from '@elastic/elasticsearch';
import type { Listing, ListingFacet } from '@estate/contracts/listings';
import {
  FACET_SIZE,
  type FacetCount,
  type ListingFilters,
  type ListingHit,
  type ListingSearch,
  type ListingSearchResult,
  type SearchAfter,
} from './listing-index';
import { distanceKm, filterKey } from './listing-projection';
import { resoMappings } from './elasticsearch-field-query';

/**
 * Translation of a listing search to an Elasticsearch request and of the answer back: pure
 * functions, unit-tested in `elasticsearch-query.spec.ts`, so the adapter itself only does I/O.
 */

/** What a listing document holds: the indexed fields (see `projectListing`) and the listing itself, not indexed. */
export const listingMappings: estypes.MappingTypeMapping = {
  // A field the mapping does not name is refused rather than guessed at.
  dynamic: 'strict',
  // The search text is derived from the listing; storing it twice would only grow the index.
  _source: { excludes: ['searchText'] },
  properties: {
    listingId: { type: 'keyword' },
    accountId: { type: 'keyword' },
    /** Marks a removal's tombstone (see the adapter). */
    deleted: { type: 'boolean' },
    status: { type: 'keyword' },
    propertyType: { type: 'keyword' },
    city: { type: 'keyword' },
    cityKey: { type: 'keyword' },
    stateKey: { type: 'keyword' },
    postalKey: { type: 'keyword' },
    source: { type: 'keyword' },
    externalId: { type: 'keyword' },
    // `scaled_float` would be the compact choice, but it lives in the mapper-extras module that the
    // CI engine lacks; a double holds every price and area exactly enough for range filters.
    listPrice: { type: 'double' },
    bedrooms: { type: 'integer' },
    bathrooms: { type: 'double' },
    livingAreaSqft: { type: 'double' },
    location: { type: 'geo_point' },
    listedAt: { type: 'date', format: 'epoch_millis' },
    updatedAt: { type: 'date', format: 'epoch_millis' },
    createdAt: { type: 'date', format: 'epoch_millis' },
    searchText: { type: 'text', analyzer: 'standard' },
    listing: { type: 'object', enabled: false },
    reso: resoMappings,
  },
};

export const listingIndexSettings: estypes.IndicesIndexSettings = {
  // One shard keeps relevance statistics and facet counts exact; listings of a brokerage platform fit in it.
  number_of_shards: 1,
  // No replica on a single node (green, not yellow), one as soon as a second node joins.
  auto_expand_replicas: '0-1',
  // Search must show a write within a second: the relay and the bus take a few milliseconds, a
  // refresh every half second leaves room. Setting it also keeps idle shards refreshing on schedule.
  refresh_interval: '500ms',
};

export function filterClauses(accountId: string, f: ListingFilters): estypes.QueryDslQueryContainer[] {
  // Every search names its account: removal tombstones carry no account and so never match.
  const out: estypes.QueryDslQueryContainer[] = [{ term: { accountId } }];
  if (f.status) out.push({ terms: { status: [...f.status] } });
  if (f.propertyType) out.push({ terms: { propertyType: [...f.propertyType] } });
  if (f.city !== undefined) out.push({ term: { cityKey: filterKey(f.city) } });
  if (f.stateOrProvince !== undefined) out.push({ term: { stateKey: filterKey(f.stateOrProvince) } });
  if (f.postalCode !== undefined) out.push({ term: { postalKey: filterKey(f.postalCode) } });
  if (f.source !== undefined) out.push({ term: { source: f.source } });
  if (f.externalId !== undefined) out.push({ term: { externalId: f.externalId } });
  if (f.minPrice !== undefined || f.maxPrice !== undefined) {
    out.push({
      range: {
        listPrice: {
          ...(f.minPrice !== undefined ? { gte: f.minPrice } : {}),
          ...(f.maxPrice !== undefined ? { lte: f.maxPrice } : {}),
        },
      },
    });
  }
  if (f.minBedrooms !== undefined) out.push({ range: { bedrooms: { gte: f.minBedrooms } } });
  if (f.minBathrooms !== undefined) out.push({ range: { bathrooms: { gte: f.minBathrooms } } });
  if (f.minLivingArea !== undefined) out.push({ range: { livingAreaSqft: { gte: f.minLivingArea } } });
  if (f.updatedSince !== undefined) out.push({ range: { updatedAt: { gte: f.updatedSince, format: 'epoch_millis' } } });
  if (f.near) {
    // In metres: the contract keeps the radius at 1 m or more, so the number never prints with an exponent.
    out.push({
      geo_distance: { distance: `${f.near.radiusKm * 1000}m`, location: { lat: f.near.lat, lon: f.near.lng } },
    });
  }
  if (f.bbox) {
    // Elasticsearch reads a box whose left edge is east of its right edge as crossing the antimeridian.
    out.push({
      geo_bounding_box: {
        location: {
          top_left: { lat: f.bbox.maxLat, lon: f.bbox.minLng },
          bottom_right: { lat: f.bbox.minLat, lon: f.bbox.maxLng },
        },
      },
    });
  }
  return out;
}

/**
 * The sort value given to a listing without one, so that it sorts last either way. Elasticsearch's
 * own `_last` uses ±2^63, which a JavaScript number cannot carry back in `search_after`; ±8.64e15 ms
 * are the limits of a JavaScript Date, exact as numbers and beyond any date a listing can hold.
 */
const MISSING_LAST = 8_640_000_000_000_000;

/** The request body (without the index) for one page of a search. */
export function searchRequest(search: ListingSearch): estypes.SearchRequest {
  const filter = filterClauses(search.accountId, search.filters);
  const { sort: order, after } = search;
  let sort: estypes.Sort;
  let searchAfter: estypes.SortResults | undefined;
  if (order.by === 'relevance') {
    sort = [{ _score: { order: 'desc' } }, { listingId: { order: 'asc' } }];
    if (after) searchAfter = [after.value ?? 0, after.id];
  } else if (order.by === 'distance') {
    const near = search.filters.near;
    if (!near) throw new Error('sorting by distance needs near');
    // Every match of `near` has a location: no missing value to place.
    sort = [
      {
        _geo_distance: {
          location: { lat: near.lat, lon: near.lng },
          order: order.direction,
          unit: 'km',
          distance_type: 'arc',
        },
      },
      { listingId: { order: order.direction } },
    ];
    if (after) searchAfter = [after.value ?? 0, after.id];
  } else {
    const missing = order.direction === 'asc' ? MISSING_LAST : -MISSING_LAST;
    sort = [{ [order.by]: { order: order.direction, missing } }, { listingId: { order: order.direction } }];
    if (after) searchAfter = [after.value ?? missing, after.id];
  }
  const q = search.filters.q;
  return {
    size: search.limit + 1,
    track_total_hits: true,
    query: {
      bool: {
        filter,
        ...(q !== undefined ? { must: [{ match: { searchText: { query: q, operator: 'and' } } }] } : {}),
      },
    },
    sort,
    ...(searchAfter ? { search_after: searchAfter } : {}),
    ...(search.facets.length > 0
      ? { aggs: Object.fromEntries(search.facets.map((name) => [name, { terms: { field: name, size: FACET_SIZE } }])) }
      : {}),
    _source: ['listing'],
  };
}

function afterOf(sortValues: estypes.SortResults | undefined): SearchAfter {
  const [value, id] = sortValues ?? [];
  if (typeof id !== 'string') throw new Error('Elasticsearch answered a hit without its listingId sort value');
  return { value: typeof value === 'number' && Math.abs(value) !== MISSING_LAST ? value : null, id };
}

type Buckets = { buckets: Array<{ key: string | number; doc_count: number }> };

export function searchResult(
  search: ListingSearch,
  response: estypes.SearchResponse<{ listing: Listing }>,
): ListingSearchResult {
  const hits = response.hits.hits;
  const page = hits.slice(0, search.limit);
  const total = response.hits.total;
  const facets: Partial<Record<ListingFacet, FacetCount[]>> = {};
  for (const name of search.facets) {
    const agg = response.aggregations?.[name] as Buckets | undefined;
    facets[name] = (agg?.buckets ?? []).map((b) => ({ value: String(b.key), count: b.doc_count }));
  }
  const near = search.filters.near;
  // Computed here rather than taken from the sort values, so that every order reports it, the same way every adapter does.
  const hitOf = (listing: Listing): ListingHit => {
    if (!near) return listing;
    const { latitude: lat, longitude: lon } = listing.location;
    return lat !== undefined && lon !== undefined
      ? { ...listing, distanceKm: distanceKm(near, { lat, lon }) }
      : listing;
  };
  return {
    items: page.map((h) => hitOf(h._source!.listing)),
    total: typeof total === 'number' ? total : (total?.value ?? 0),
    next: hits.length > search.limit && page.length > 0 ? afterOf(page[page.length - 1].sort) : null,
    facets,
    tookMs: response.took,
  };
}
