import type { Listing, ListingFacet, ListingSortField, ListingStatus, PropertyType } from '@estate/contracts/listings';
import type { FieldFilter, OrderKey } from '@estate/reso';

/**
 * The search-index port: a projection of the listings store, kept in step from listing events,
 * queried by `GET /v1/listings`. The adapters (Elasticsearch, SQLite, in-process) pass one contract
 * suite (`libs/search/test/listing-index.contract.ts`) and answer the same data with the same results,
 * except for how words match (see {@link ListingIndex.textMatching}).
 */

/** A listing and the account that owns it, as the index receives it. */
export interface IndexedListing {
  accountId: string;
  listing: Listing;
}

/** A deleted listing: `version` is the deletion's (one above the listing's last). */
export interface ListingRemoval {
  id: string;
  version: number;
}

/** Filters, all optional and combined with AND. Validated before they get here. */
export interface ListingFilters {
  status?: readonly ListingStatus[];
  propertyType?: readonly PropertyType[];
  /** City, state and postal code match whole values, ignoring case. */
  city?: string;
  stateOrProvince?: string;
  postalCode?: string;
  source?: string;
  externalId?: string;
  /** Inclusive bounds on `pricing.listPrice`. */
  minPrice?: number;
  maxPrice?: number;
  minBedrooms?: number;
  minBathrooms?: number;
  /** Square feet; listings measured in square metres are converted. */
  minLivingArea?: number;
  /** Epoch milliseconds, inclusive. */
  updatedSince?: number;
  near?: { lat: number; lng: number; radiusKm: number };
  /** May cross the antimeridian (`minLng > maxLng`). */
  bbox?: { minLng: number; minLat: number; maxLng: number; maxLat: number };
  /** Full text over description, address and features: every word must match. */
  q?: string;
}

/**
 * `relevance` (best first) only with `q`; `distance` (from `near`'s point) only with `near`; field sorts put
 * listings without the value last either way.
 */
export type ListingSort = { by: 'relevance' } | { by: ListingSortField | 'distance'; direction: 'asc' | 'desc' };

/**
 * Where a page ends: the last item's sort value (its score for relevance, kilometres for distance; null
 * when the listing has no value for the sort field) and its id, the tiebreaker of every order.
 */
export interface SearchAfter {
  value: number | null;
  id: string;
  /**
   * Relevance on an index that ranks its matches in windows (SQLite, decision 0134): the window of the last item, as
   * the range of the index's row keys it covers, `[from, to)` (`to` null: no upper bound). Other indexes ignore it.
   */
  window?: RankWindow;
}

export type RankWindow = [from: number, to: number | null];

export interface ListingSearch {
  accountId: string;
  filters: ListingFilters;
  sort: ListingSort;
  after?: SearchAfter;
  limit: number;
  facets: readonly ListingFacet[];
}

export interface FacetCount {
  value: string;
  count: number;
}

/** A listing found, with its distance from `near`'s point when the search has one. */
export type ListingHit = Listing & { distanceKm?: number };

export interface ListingSearchResult {
  items: ListingHit[];
  /** Every match of the filters, whatever the page. */
  total: number;
  /** Null on the last page. */
  next: SearchAfter | null;
  /** Counts over every match, most frequent first (ties by value), at most {@link FACET_SIZE} values each. */
  facets: Partial<Record<ListingFacet, FacetCount[]>>;
  /** The engine's own time for the query (Elasticsearch `took`; the in-process index times itself). */
  tookMs: number;
}

export const FACET_SIZE = 50;

/**
 * A query over the listings' RESO fields (docs/reso.md): a filter over the indexed Data Dictionary fields, an order
 * (missing values last either way), an offset and a page size. The RESO Web API's `$filter`/`$orderby` and its
 * keyset pages (the position is a filter too) run here, on the index, never on the documents.
 */
export interface FieldQuery {
  accountId: string;
  where?: FieldFilter;
  order: readonly OrderKey[];
  skip: number;
  limit: number;
  /** Count every match of `where` too. */
  count: boolean;
}

export interface FieldQueryResult {
  items: Listing[];
  total?: number;
}

export interface IndexWrite {
  /**
   * Resolve only once searches see the change (read-your-writes for the client that made it): Elasticsearch
   * refreshes the shard with the write; the other adapters show every change at once anyway.
   */
  visible?: boolean;
}

export interface ListingIndex {
  readonly kind: 'elasticsearch' | 'sqlite' | 'memory';
  /**
   * How `q` matches words. `exact`: whole words as written (case ignored). `stemmed`: words reduced to their
   * stem (`pools` finds `pool` and the other way round), and the last word of `q` also matches as a prefix
   * (`gard` finds `garden`), for search as one types.
   */
  readonly textMatching: 'exact' | 'stemmed';
  /** Which index this is (the Elasticsearch alias): every index fed from the events needs its own consumer of them. */
  readonly name: string;
  /**
   * Creates what the index needs; `created` says it did not exist (always, for an index in process
   * memory), so it holds nothing yet and its owner fills it from the store.
   */
  open(): Promise<{ created: boolean }>;
  /** Applies each listing unless the index already holds that version or a newer one (or a newer deletion). */
  upsert(listings: readonly IndexedListing[], options?: IndexWrite): Promise<void>;
  /** Removes listings, remembering the deletion's version so that an older upsert arriving late is refused. */
  remove(removals: readonly ListingRemoval[], options?: IndexWrite): Promise<void>;
  search(search: ListingSearch): Promise<ListingSearchResult>;
  /** The RESO query: filters and orders on the listings' Data Dictionary fields. */
  select(query: FieldQuery): Promise<FieldQueryResult>;
  /** Makes every accepted change visible to searches at once (tests, reindexing). */
  refresh(): Promise<void>;
  /** Builds a fresh index from `read` and puts it in place of the current one in one step. */
  replaceAll(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }>;
  /** Every listing the index holds, in id order, in batches. */
  scanIds(): AsyncIterable<Array<{ id: string; version: number }>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The index cannot be reached or is overloaded: worth retrying later. */
export class SearchIndexUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SearchIndexUnavailable';
  }
}

/** The index refused a document for good (a mapping problem): retrying will not help. */
export class SearchIndexRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SearchIndexRejected';
  }
}
