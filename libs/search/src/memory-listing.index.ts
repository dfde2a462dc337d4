import { performance } from 'node:perf_hooks';
import type { Listing, ListingFacet } from '@estate/contracts/listings';
import {
  FACET_SIZE,
  type FacetCount,
  type IndexedListing,
  type ListingFilters,
  type ListingHit,
  type ListingIndex,
  type ListingRemoval,
  type FieldQuery,
  type FieldQueryResult,
  type ListingSearch,
  type ListingSearchResult,
  type ListingSort,
  type SearchAfter,
} from './listing-index';
import {
  arcDistanceMetres,
  distanceKm,
  filterKey,
  projectListing,
  tokenize,
  type ListingFields,
} from './listing-projection';
import { compareRecords, matches, type FieldRecord } from './field-query';
import { propertyIndexRecord } from '@estate/reso';

/**
 * The embedded profile's index, in process memory (see docs/decisions/0010): filters, sorts and
 * facets by one pass over the account's listings, full text through an inverted index scored with
 * BM25 as Lucene computes it, so the answers match Elasticsearch's for the same data.
 */

interface Entry {
  fields: ListingFields;
  listing: Listing;
  /** Words in `searchText`, with their counts. */
  terms: Map<string, number>;
  length: number;
}

/** A candidate on its way into a page: its sort value (score for relevance) and id. */
interface Hit {
  entry: Entry;
  value: number | null;
  id: string;
}

// Lucene's BM25 defaults, which Elasticsearch uses.
const K1 = 1.2;
const B = 0.75;
const SCAN_BATCH = 1000;

const byId = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The filters (all but `q`) as one predicate over indexed fields. */
export function listingMatcher(accountId: string, f: ListingFilters): (x: ListingFields) => boolean {
  const checks: Array<(x: ListingFields) => boolean> = [(x) => x.accountId === accountId];
  if (f.status) {
    const wanted = new Set<string>(f.status);
    checks.push((x) => wanted.has(x.status));
  }
  if (f.propertyType) {
    const wanted = new Set<string>(f.propertyType);
    checks.push((x) => wanted.has(x.propertyType));
  }
  if (f.city !== undefined) {
    const key = filterKey(f.city);
    checks.push((x) => x.cityKey === key);
  }
  if (f.stateOrProvince !== undefined) {
    const key = filterKey(f.stateOrProvince);
    checks.push((x) => x.stateKey === key);
  }
  if (f.postalCode !== undefined) {
    const key = filterKey(f.postalCode);
    checks.push((x) => x.postalKey === key);
  }
  if (f.source !== undefined) checks.push((x) => x.source === f.source);
  if (f.externalId !== undefined) checks.push((x) => x.externalId === f.externalId);
  if (f.minPrice !== undefined) checks.push((x) => x.listPrice >= f.minPrice!);
  if (f.maxPrice !== undefined) checks.push((x) => x.listPrice <= f.maxPrice!);
  if (f.minBedrooms !== undefined) checks.push((x) => x.bedrooms !== undefined && x.bedrooms >= f.minBedrooms!);
  if (f.minBathrooms !== undefined) checks.push((x) => x.bathrooms !== undefined && x.bathrooms >= f.minBathrooms!);
  if (f.minLivingArea !== undefined)
    checks.push((x) => x.livingAreaSqft !== undefined && x.livingAreaSqft >= f.minLivingArea!);
  if (f.updatedSince !== undefined) checks.push((x) => x.updatedAt >= f.updatedSince!);
  if (f.near) {
    const { lat, lng, radiusKm } = f.near;
    const metres = radiusKm * 1000;
    checks.push(
      (x) => x.location !== undefined && arcDistanceMetres(lat, lng, x.location.lat, x.location.lon) <= metres,
    );
  }
  if (f.bbox) {
    const { minLng, minLat, maxLng, maxLat } = f.bbox;
    const crossesAntimeridian = minLng > maxLng;
    checks.push((x) => {
      if (!x.location) return false;
      const { lat, lon } = x.location;
      if (lat < minLat || lat > maxLat) return false;
      return crossesAntimeridian ? lon >= minLng || lon <= maxLng : lon >= minLng && lon <= maxLng;
    });
  }
  return (x) => {
    for (const check of checks) if (!check(x)) return false;
    return true;
  };
}

/** Page order: best score first for relevance; otherwise the field, missing values last, then id. */
export function hitOrder(sort: ListingSort): (a: Pick<Hit, 'value' | 'id'>, b: Pick<Hit, 'value' | 'id'>) => number {
  if (sort.by === 'relevance') return (a, b) => (b.value as number) - (a.value as number) || byId(a.id, b.id);
  const dir = sort.direction === 'asc' ? 1 : -1;
  return (a, b) => {
    if (a.value === null || b.value === null) {
      if (a.value !== b.value) return a.value === null ? 1 : -1;
      return dir * byId(a.id, b.id);
    }
    return dir * (a.value - b.value) || dir * byId(a.id, b.id);
  };
}

/** Counts by value, most frequent first, ties by value: the order of Elasticsearch's terms aggregation. */
function facetList(counts: Map<string, number>): FacetCount[] {
  return [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || byId(a.value, b.value))
    .slice(0, FACET_SIZE);
}

/** Everything that `replaceAll` swaps in one step. */
class Corpus {
  readonly entries = new Map<string, Entry>();
  readonly byAccount = new Map<string, Map<string, Entry>>();
  readonly postings = new Map<string, Map<Entry, number>>();
  /** Listings with at least one word, and their words in total: BM25's document count and average length. */
  textDocs = 0;
  totalLength = 0;

  add(entry: Entry): void {
    const id = entry.fields.listingId;
    this.entries.set(id, entry);
    let account = this.byAccount.get(entry.fields.accountId);
    if (!account) this.byAccount.set(entry.fields.accountId, (account = new Map()));
    account.set(id, entry);
    for (const [term, count] of entry.terms) {
      let list = this.postings.get(term);
      if (!list) this.postings.set(term, (list = new Map()));
      list.set(entry, count);
    }
    if (entry.length > 0) this.textDocs += 1;
    this.totalLength += entry.length;
  }

  delete(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.byAccount.get(entry.fields.accountId)?.delete(id);
    for (const term of entry.terms.keys()) {
      const list = this.postings.get(term);
      list?.delete(entry);
      if (list?.size === 0) this.postings.delete(term);
    }
    if (entry.length > 0) this.textDocs -= 1;
    this.totalLength -= entry.length;
  }

  /** Listings of the account holding every word of `q`, with their BM25 scores. */
  *textMatches(accountId: string, q: string): Iterable<[Entry, number]> {
    const words = tokenize(q);
    if (words.length === 0) return;
    // A word given twice counts twice, as in Elasticsearch's match query.
    const weights = new Map<string, number>();
    for (const w of words) weights.set(w, (weights.get(w) ?? 0) + 1);
    const lists: Array<{ list: Map<Entry, number>; idf: number; weight: number }> = [];
    for (const [word, weight] of weights) {
      const list = this.postings.get(word);
      if (!list) return;
      lists.push({ list, weight, idf: Math.log(1 + (this.textDocs - list.size + 0.5) / (list.size + 0.5)) });
    }
    lists.sort((a, b) => a.list.size - b.list.size);
    const avgLength = this.totalLength / this.textDocs;
    const [rarest, ...rest] = lists;
    for (const entry of rarest.list.keys()) {
      if (entry.fields.accountId !== accountId) continue;
      const norm = K1 * (1 - B + (B * entry.length) / avgLength);
      let score = 0;
      let all = true;
      for (const { list, idf, weight } of [rarest, ...rest]) {
        const tf = list.get(entry);
        if (tf === undefined) {
          all = false;
          break;
        }
        score += weight * idf * (tf / (tf + norm));
      }
      if (all) yield [entry, score];
    }
  }
}

function entryOf(item: IndexedListing): Entry {
  const fields = projectListing(item);
  const words = tokenize(fields.searchText);
  const terms = new Map<string, number>();
  for (const w of words) terms.set(w, (terms.get(w) ?? 0) + 1);
  return { fields, listing: item.listing, terms, length: words.length };
}

export class MemoryListingIndex implements ListingIndex {
  readonly kind = 'memory' as const;
  readonly name = 'memory';
  readonly textMatching = 'exact' as const;
  private corpus = new Corpus();
  /** Versions of removed listings, so that an older upsert arriving after the removal is refused. */
  private readonly removed = new Map<string, number>();
  private opened = false;

  async open(): Promise<{ created: boolean }> {
    // Nothing survives the process: the first open always starts from nothing.
    const created = !this.opened;
    this.opened = true;
    return { created };
  }

  async upsert(listings: readonly IndexedListing[]): Promise<void> {
    for (const item of listings) {
      const id = item.listing.id;
      if (this.knownVersion(id) >= item.listing.version) continue;
      this.corpus.delete(id);
      this.removed.delete(id);
      this.corpus.add(entryOf(item));
    }
  }

  async remove(removals: readonly ListingRemoval[]): Promise<void> {
    for (const { id, version } of removals) {
      if (this.knownVersion(id) >= version) continue;
      this.corpus.delete(id);
      this.removed.set(id, version);
    }
  }

  async search(search: ListingSearch): Promise<ListingSearchResult> {
    const started = performance.now();
    const corpus = this.corpus;
    const matches = listingMatcher(search.accountId, search.filters);
    const order = hitOrder(search.sort);
    const by = search.sort.by;
    const near = search.filters.near;
    if (by === 'distance' && !near) throw new Error('sorting by distance needs near');
    const sortField = by === 'relevance' || by === 'distance' ? undefined : by;
    const distanceOf = (fields: ListingFields): number | undefined =>
      near && fields.location ? distanceKm(near, fields.location) : undefined;
    const after = search.after;
    const counts = search.facets.map((name) => ({
      name,
      field: name as ListingFacet,
      counts: new Map<string, number>(),
    }));
    const keep = search.limit + 1;
    const page: Hit[] = [];
    let total = 0;

    const consider = (entry: Entry, score: number): void => {
      const fields = entry.fields;
      if (!matches(fields)) return;
      total += 1;
      for (const facet of counts) {
        const value = fields[facet.field];
        facet.counts.set(value, (facet.counts.get(value) ?? 0) + 1);
      }
      const value = sortField ? (fields[sortField] ?? null) : by === 'distance' ? distanceOf(fields)! : score;
      const hit: Hit = { entry, id: fields.listingId, value };
      if (after && order(hit, after) <= 0) return;
      if (page.length === keep && order(hit, page[keep - 1]) >= 0) return;
      // Binary insertion keeps only the best `limit + 1`: no sort of every match.
      let lo = 0;
      let hi = page.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (order(page[mid], hit) < 0) lo = mid + 1;
        else hi = mid;
      }
      page.splice(lo, 0, hit);
      if (page.length > keep) page.pop();
    };

    if (search.filters.q !== undefined) {
      for (const [entry, score] of corpus.textMatches(search.accountId, search.filters.q)) consider(entry, score);
    } else {
      for (const entry of corpus.byAccount.get(search.accountId)?.values() ?? []) consider(entry, 0);
    }

    const items = page.slice(0, search.limit);
    const last = items[items.length - 1];
    const next: SearchAfter | null = page.length > search.limit && last ? { value: last.value, id: last.id } : null;
    return {
      items: items.map((h): ListingHit => {
        const km = distanceOf(h.entry.fields);
        return km === undefined ? h.entry.listing : { ...h.entry.listing, distanceKm: km };
      }),
      total,
      next,
      facets: Object.fromEntries(counts.map((f) => [f.name, facetList(f.counts)])),
      tookMs: performance.now() - started,
    };
  }

  async select(query: FieldQuery): Promise<FieldQueryResult> {
    const rows: Array<{ record: FieldRecord; listing: Listing }> = [];
    for (const entry of this.corpus.entries.values()) {
      if (entry.fields.accountId !== query.accountId) continue;
      const record = propertyIndexRecord(entry.listing);
      if (!query.where || matches(query.where, record)) rows.push({ record, listing: entry.listing });
    }
    rows.sort((a, b) => compareRecords(query.order, a.record, b.record));
    return {
      items: rows.slice(query.skip, query.skip + query.limit).map((r) => r.listing),
      ...(query.count ? { total: rows.length } : {}),
    };
  }

  async refresh(): Promise<void> {
    // Changes are visible as soon as they are applied.
  }

  async replaceAll(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    const next = new Corpus();
    for await (const batch of read()) for (const item of batch) next.add(entryOf(item));
    this.corpus = next;
    for (const id of next.entries.keys()) this.removed.delete(id);
    return { indexed: next.entries.size };
  }

  async *scanIds(): AsyncIterable<Array<{ id: string; version: number }>> {
    const all = [...this.corpus.entries.values()]
      .map((e) => ({ id: e.fields.listingId, version: e.fields.version }))
      .sort((a, b) => byId(a.id, b.id));
    for (let i = 0; i < all.length; i += SCAN_BATCH) yield all.slice(i, i + SCAN_BATCH);
  }

  async ping(): Promise<void> {
    // In process: always there.
  }

  async close(): Promise<void> {
    this.corpus = new Corpus();
  }

  private knownVersion(id: string): number {
    return this.corpus.entries.get(id)?.fields.version ?? this.removed.get(id) ?? 0;
  }
}
