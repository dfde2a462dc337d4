import type { ListingFacet } from '@estate/contracts/listings';
import type { ListingFilters } from './listing-index';
import { EARTH_RADIUS_M, filterKey, tokenize } from './listing-projection';

/**
 * The SQL of a listing search over the SQLite index's tables (sqlite-listing-schema.ts): the WHERE clause of the
 * filters, the full-text match expression and the geographic prefilters. Pure: no database here.
 */
export const DISTANCE_FN = 'search_distance_m';
/** Degrees added around a `near` box: the exact distance check follows, the box only has to hold every match. */
const BOX_MARGIN_DEG = 1e-6;

export const SORT_COLUMNS = {
  listPrice: 'l.list_price',
  listedAt: 'l.listed_at',
  updatedAt: 'l.updated_at',
  createdAt: 'l.created_at',
} as const;
/** The index that walks each field order (every one starts with the account and ends with the id). */
export const SORT_INDEXES = {
  listPrice: 'search_listings_price_bands',
  listedAt: 'search_listings_listed',
  updatedAt: 'search_listings_updated',
  createdAt: 'search_listings_created',
} as const;
/** Sort fields a listing may lack: those listings come after the others, either way. */
export const NULLABLE = new Set<string>(['listedAt']);
export const FACET_COLUMNS: Record<ListingFacet, { select: string }> = {
  status: { select: 'l.status' },
  propertyType: { select: 'l.property_type' },
  // The cities as written (the key, for filtering, follows from the city).
  city: { select: 'l.city' },
};

export const byValue = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * `q` as an FTS5 query: every word quoted (FTS5 cuts it again with its own tokenizer, as it cut the text), all
 * required, the last one also as a prefix unless `whole` says of it that its prefix matches no other term than its own.
 * Undefined when `q` holds no word.
 */
export function matchExpression(q: string, whole?: (word: string) => boolean): string | undefined {
  const words = tokenize(q);
  if (words.length === 0) return undefined;
  const last = words.length - 1;
  const prefix = !whole?.(words[last]!);
  return words.map((w, i) => `"${w.replaceAll('"', '""')}"${i === last && prefix ? '*' : ''}`).join(' ');
}

export type LngRange = [number, number];

/** The boxes that hold every point within `radiusKm` of the centre (one per side of the antimeridian). */
export function nearBoxes({ lat, lng, radiusKm }: { lat: number; lng: number; radiusKm: number }): {
  minLat: number;
  maxLat: number;
  lngs: LngRange[];
} {
  const angle = (radiusKm * 1000) / EARTH_RADIUS_M;
  const deg = 180 / Math.PI;
  const minLat = lat - angle * deg - BOX_MARGIN_DEG;
  const maxLat = lat + angle * deg + BOX_MARGIN_DEG;
  if (minLat <= -90 || maxLat >= 90 || angle >= Math.PI / 2)
    return { minLat: Math.max(minLat, -90), maxLat: Math.min(maxLat, 90), lngs: [[-180, 180]] };
  // The widest longitude reached on a circle around the centre (Matuschek, "Finding points within a distance").
  const dLng = Math.asin(Math.min(1, Math.sin(angle) / Math.cos(lat / deg))) * deg + BOX_MARGIN_DEG;
  return { minLat, maxLat, lngs: lngRanges(lng - dLng, lng + dLng) };
}

function lngRanges(from: number, to: number): LngRange[] {
  if (to - from >= 360) return [[-180, 180]];
  if (from < -180)
    return [
      [from + 360, 180],
      [-180, to],
    ];
  if (to > 180)
    return [
      [from, 180],
      [-180, to - 360],
    ];
  return [[from, to]];
}

/** A WHERE clause in parts, with its positional parameters. */
export class Where {
  readonly parts: string[] = [];
  readonly params: unknown[] = [];

  add(sql: string, ...params: unknown[]): this {
    this.parts.push(sql);
    this.params.push(...params);
    return this;
  }

  get sql(): string {
    return this.parts.join(' AND ');
  }
}

/**
 * Where a search's rows come from. A geographic filter drives from the point index (the box's latitudes, then the exact
 * test and every other filter on their rows); otherwise `q` drives from the FTS5 matches; otherwise the listings
 * table, through whichever of its indexes fits. `from` names `search_listings` as `l` in every case.
 */
export interface Source {
  from: string;
  params: unknown[];
  /**
   * How the rows are reached: by the point index, the text index, or an index of the listings table (`walk`: the sort's
   * index, in order, each row tested: geographic filters by their exact test alone, `q` by a lookup of the row).
   */
  driver: 'geo' | 'text' | 'table' | 'walk';
}

/** The rows a search starts from (see {@link Source}); `match` is the FTS5 expression of `q`, if any. */
export function searchSource(f: ListingFilters, match: string | undefined): Source {
  if (f.near || f.bbox)
    // The point index covers the box test, the distance and the sorts: a box is one range of latitudes read in order,
    // no row is visited unless another filter needs it.
    return { from: 'search_listings l INDEXED BY search_listings_point', params: [], driver: 'geo' };
  if (match !== undefined)
    return {
      from: '(SELECT rowid AS id FROM search_text WHERE search_text MATCH ?) t CROSS JOIN search_listings l ON l.id = t.id',
      params: [match],
      driver: 'text',
    };
  return { from: 'search_listings l', params: [], driver: 'table' };
}

/**
 * The filters over `search_listings l`, after its {@link searchSource}: `q` and the geographic box that drives are
 * left out (the source applies them); a second geographic filter, and `q` behind a geographic one, stay here.
 */
export function filterWhere(accountId: string, f: ListingFilters, source?: Source, match?: string): Where {
  const w = new Where().add('l.account_id = ?', accountId);
  const list = (values: readonly string[]) => values.map(() => '?').join(', ');
  if (f.status) w.add(`l.status IN (${list(f.status)})`, ...f.status);
  if (f.propertyType) w.add(`l.property_type IN (${list(f.propertyType)})`, ...f.propertyType);
  if (f.city !== undefined) w.add('l.city_key = ?', filterKey(f.city));
  if (f.stateOrProvince !== undefined) w.add('l.state_key = ?', filterKey(f.stateOrProvince));
  if (f.postalCode !== undefined) w.add('l.postal_key = ?', filterKey(f.postalCode));
  if (f.source !== undefined) w.add('l.source = ?', f.source);
  if (f.externalId !== undefined) w.add('l.external_id = ?', f.externalId);
  if (f.minPrice !== undefined) w.add('l.list_price >= ?', f.minPrice);
  if (f.maxPrice !== undefined) w.add('l.list_price <= ?', f.maxPrice);
  // A listing without the value compares as NULL and drops out, as the contract wants. Room and area minimums keep
  // most listings: with a stronger filter beside them, `+` keeps the planner off their own indexes (it would read
  // most of the account through one of them).
  const weak =
    f.status ||
    f.propertyType ||
    f.city !== undefined ||
    f.stateOrProvince !== undefined ||
    f.postalCode !== undefined ||
    f.source !== undefined ||
    f.externalId !== undefined ||
    f.minPrice !== undefined ||
    f.maxPrice !== undefined
      ? '+'
      : '';
  if (f.minBedrooms !== undefined) w.add(`${weak}l.bedrooms >= ?`, f.minBedrooms);
  if (f.minBathrooms !== undefined) w.add(`${weak}l.bathrooms >= ?`, f.minBathrooms);
  if (f.minLivingArea !== undefined) w.add(`${weak}l.living_area >= ?`, f.minLivingArea);
  if (f.updatedSince !== undefined) w.add('l.updated_at >= ?', f.updatedSince);
  if (f.near) {
    // The box around the circle (a range of the point index), then the exact distance.
    const box = nearBoxes(f.near);
    w.add('l.lat BETWEEN ? AND ?', box.minLat, box.maxLat);
    if (box.lngs.length === 1) w.add('l.lon BETWEEN ? AND ?', ...box.lngs[0]);
    else w.add(`(${box.lngs.map(() => 'l.lon BETWEEN ? AND ?').join(' OR ')})`, ...box.lngs.flat());
    w.add(`${DISTANCE_FN}(l.lat, l.lon, ?, ?) <= ?`, f.near.lat, f.near.lng, f.near.radiusKm * 1000);
  }
  if (f.bbox) {
    const { minLng, minLat, maxLng, maxLat } = f.bbox;
    const crosses = minLng > maxLng;
    w.add('l.lat BETWEEN ? AND ?', minLat, maxLat);
    if (crosses) w.add('(l.lon >= ? OR l.lon <= ?)', minLng, maxLng);
    else w.add('l.lon BETWEEN ? AND ?', minLng, maxLng);
  }
  // Behind a geographic source or a walk, each row is looked up in the text index by its key.
  if (match !== undefined && source?.driver !== 'text')
    w.add('EXISTS (SELECT 1 FROM search_text WHERE search_text MATCH ? AND search_text.rowid = l.id)', match);
  return w;
}
