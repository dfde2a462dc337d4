import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import type { Listing, ListingFacet } from '@estate/contracts/listings';
import {
  FACET_SIZE,
  SearchIndexUnavailable,
  type FacetCount,
  type IndexedListing,
  type ListingFilters,
  type ListingHit,
  type ListingIndex,
  type ListingRemoval,
  type ListingSearch,
  type ListingSearchResult,
  type SearchAfter,
} from './listing-index';
import {
  arcDistanceMetres,
  distanceKm,
  EARTH_RADIUS_M,
  filterKey,
  projectListing,
  tokenize,
  type ListingFields,
} from './listing-projection';

/**
 * The embedded profile's index in SQLite (docs/spec.md §2): indexed columns for filters, sorts and facets,
 * FTS5 for `q` (Porter stems, the last word as a prefix, BM25 ranking), an R*Tree for `near` and `bbox`.
 * Its tables are prefixed `search_`, so it can share the listings service's database file with the
 * document store. Every composite index starts with the account: every query names one.
 */

export interface SqliteListingIndexOptions {
  /** An open database (shared with other tables, left open by `close()`), or a file to open (closed by `close()`). */
  database: Database.Database | string;
  /** Which index this is: every index fed from the listing events needs its own consumer of them. */
  name?: string;
  /**
   * The owner of a shared connection, whose transactions span awaits: each operation waits until no
   * transaction of another caller is open, and runs inside the caller's own (committing with it).
   */
  gate?: { turn(): Promise<void> };
}

/** Runs one statement of a search: for real, or to see its plan. */
type Run = (sql: string, params: unknown[]) => unknown[];
/** Runs one statement and hands its rows over one by one, as arrays of column values (many rows, no objects). */
type Scan = (sql: string, params: unknown[]) => Iterable<unknown[]>;

/** The columns of a listing, in the order of {@link rowOf}. */
const COLUMNS = [
  'listing_id',
  'account_id',
  'version',
  'status',
  'property_type',
  'city',
  'city_key',
  'state_key',
  'postal_key',
  'source',
  'external_id',
  'list_price',
  'bedrooms',
  'bathrooms',
  'living_area',
  'lat',
  'lon',
  'listed_at',
  'updated_at',
  'created_at',
] as const;

const COLUMN_TYPES = `
  listing_id TEXT NOT NULL UNIQUE, account_id TEXT NOT NULL, version INTEGER NOT NULL,
  status TEXT NOT NULL, property_type TEXT NOT NULL, city TEXT NOT NULL, city_key TEXT NOT NULL, state_key TEXT NOT NULL, postal_key TEXT NOT NULL,
  source TEXT, external_id TEXT, list_price REAL NOT NULL, bedrooms REAL, bathrooms REAL, living_area REAL, lat REAL, lon REAL,
  listed_at INTEGER, updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL`;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_listings (id INTEGER PRIMARY KEY, ${COLUMN_TYPES});
  -- The documents apart: rows that filters and sorts read stay small, a page reads 20 documents, not every match's.
  CREATE TABLE IF NOT EXISTS search_docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
  -- The price order also covers the numeric filters and the facets, so that a price band is counted and faceted from the index alone.
  DROP INDEX IF EXISTS search_listings_price;
  CREATE INDEX IF NOT EXISTS search_listings_price_facets ON search_listings (account_id, list_price, listing_id, bedrooms, bathrooms, living_area, status, property_type, city_key, city);
  CREATE INDEX IF NOT EXISTS search_listings_listed ON search_listings (account_id, listed_at, listing_id);
  CREATE INDEX IF NOT EXISTS search_listings_updated ON search_listings (account_id, updated_at, listing_id);
  CREATE INDEX IF NOT EXISTS search_listings_created ON search_listings (account_id, created_at, listing_id);
  CREATE INDEX IF NOT EXISTS search_listings_status ON search_listings (account_id, status);
  CREATE INDEX IF NOT EXISTS search_listings_type ON search_listings (account_id, property_type);
  CREATE INDEX IF NOT EXISTS search_listings_city ON search_listings (account_id, city_key, city);
  CREATE INDEX IF NOT EXISTS search_listings_state ON search_listings (account_id, state_key);
  CREATE INDEX IF NOT EXISTS search_listings_postal ON search_listings (account_id, postal_key);
  CREATE INDEX IF NOT EXISTS search_listings_bedrooms ON search_listings (account_id, bedrooms);
  CREATE INDEX IF NOT EXISTS search_listings_bathrooms ON search_listings (account_id, bathrooms);
  CREATE INDEX IF NOT EXISTS search_listings_area ON search_listings (account_id, living_area);
  CREATE INDEX IF NOT EXISTS search_listings_source ON search_listings (account_id, source, external_id);
  CREATE VIRTUAL TABLE IF NOT EXISTS search_text USING fts5 (text, content='', contentless_delete=1, tokenize='porter unicode61');
  CREATE VIRTUAL TABLE IF NOT EXISTS search_geo USING rtree (id, min_lat, max_lat, min_lon, max_lon);
  CREATE TABLE IF NOT EXISTS search_removed (listing_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
  -- Facet counts of whole accounts, kept by triggers: an unfiltered search reads its facets and total here.
  CREATE TABLE IF NOT EXISTS search_counts (account_id TEXT NOT NULL, facet TEXT NOT NULL, value TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (account_id, facet, value)) WITHOUT ROWID;
  ${['INSERT', 'DELETE', 'UPDATE OF account_id, status, property_type, city'].map((event) => countTrigger(event)).join('\n')}
`;

function countTrigger(event: string): string {
  const name = `search_counts_${event.split(' ')[0].toLowerCase()}`;
  const change = (row: 'NEW' | 'OLD', by: 1 | -1) =>
    (['status', 'propertyType', 'city'] as const)
      .map((facet) => {
        const column = { status: 'status', propertyType: 'property_type', city: 'city' }[facet];
        return `INSERT INTO search_counts VALUES (${row}.account_id, '${facet}', ${row}.${column}, ${by}) ON CONFLICT DO UPDATE SET n = n + ${by};`;
      })
      .join(' ');
  const body =
    event === 'INSERT'
      ? change('NEW', 1)
      : event === 'DELETE'
        ? change('OLD', -1)
        : `${change('OLD', -1)} ${change('NEW', 1)}`;
  return `CREATE TRIGGER IF NOT EXISTS ${name} AFTER ${event} ON search_listings BEGIN ${body} END;`;
}

const SCAN_BATCH = 1000;
const DISTANCE_FN = 'search_distance_m';
/** Degrees added around a `near` box: the exact distance check follows, the box only has to hold every match. */
const BOX_MARGIN_DEG = 1e-6;

const SORT_COLUMNS = {
  listPrice: 'l.list_price',
  listedAt: 'l.listed_at',
  updatedAt: 'l.updated_at',
  createdAt: 'l.created_at',
} as const;
/** Sort fields a listing may lack: those listings come after the others, either way. */
const NULLABLE = new Set<string>(['listedAt']);
const FACET_COLUMNS: Record<ListingFacet, { select: string }> = {
  status: { select: 'l.status' },
  propertyType: { select: 'l.property_type' },
  // The cities as written (the key, for filtering, follows from the city).
  city: { select: 'l.city' },
};

const byValue = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function rowOf(fields: ListingFields): unknown[] {
  return [
    fields.listingId,
    fields.accountId,
    fields.version,
    fields.status,
    fields.propertyType,
    fields.city,
    fields.cityKey,
    fields.stateKey,
    fields.postalKey,
    fields.source ?? null,
    fields.externalId ?? null,
    fields.listPrice,
    fields.bedrooms ?? null,
    fields.bathrooms ?? null,
    fields.livingAreaSqft ?? null,
    fields.location?.lat ?? null,
    fields.location?.lon ?? null,
    fields.listedAt ?? null,
    fields.updatedAt,
    fields.createdAt,
  ];
}

/**
 * `q` as an FTS5 query: every word quoted (FTS5 cuts it again with its own tokenizer, as it cut the text), all
 * required, the last one also as a prefix. Undefined when `q` holds no word.
 */
export function matchExpression(q: string): string | undefined {
  const words = tokenize(q);
  if (words.length === 0) return undefined;
  return words.map((w, i) => `"${w.replaceAll('"', '""')}"${i === words.length - 1 ? '*' : ''}`).join(' ');
}

type LngRange = [number, number];

/** The R*Tree boxes that hold every point within `radiusKm` of the centre (one per side of the antimeridian). */
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
class Where {
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

/** The filters (`q` aside: it is joined or matched where the query needs it) over `search_listings l`. */
function filterWhere(accountId: string, f: ListingFilters): Where {
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
  // A listing without the value compares as NULL and drops out, as the contract wants.
  if (f.minBedrooms !== undefined) w.add('l.bedrooms >= ?', f.minBedrooms);
  if (f.minBathrooms !== undefined) w.add('l.bathrooms >= ?', f.minBathrooms);
  if (f.minLivingArea !== undefined) w.add('l.living_area >= ?', f.minLivingArea);
  if (f.updatedSince !== undefined) w.add('l.updated_at >= ?', f.updatedSince);
  if (f.near) {
    const box = nearBoxes(f.near);
    geoPrefilter(w, box.minLat, box.maxLat, box.lngs);
    w.add(`${DISTANCE_FN}(l.lat, l.lon, ?, ?) <= ?`, f.near.lat, f.near.lng, f.near.radiusKm * 1000);
  }
  if (f.bbox) {
    const { minLng, minLat, maxLng, maxLat } = f.bbox;
    const crosses = minLng > maxLng;
    geoPrefilter(
      w,
      minLat,
      maxLat,
      crosses
        ? [
            [minLng, 180],
            [-180, maxLng],
          ]
        : [[minLng, maxLng]],
    );
    // The R*Tree holds 32-bit floats rounded outwards: the exact test is on the stored doubles.
    w.add('l.lat BETWEEN ? AND ?', minLat, maxLat);
    if (crosses) w.add('(l.lon >= ? OR l.lon <= ?)', minLng, maxLng);
    else w.add('l.lon BETWEEN ? AND ?', minLng, maxLng);
  }
  return w;
}

function geoPrefilter(w: Where, minLat: number, maxLat: number, lngs: LngRange[]): void {
  const box = 'SELECT id FROM search_geo WHERE max_lat >= ? AND min_lat <= ? AND max_lon >= ? AND min_lon <= ?';
  w.add(
    `l.id IN (${lngs.map(() => box).join(' UNION ALL ')})`,
    ...lngs.flatMap(([from, to]) => [minLat, maxLat, from, to]),
  );
}

interface FacetRow {
  facet?: string;
  value: string;
  n: number;
}

interface PageRow {
  /** The row's key, which also keys its document, text and point. */
  rid: number;
  id: string;
  value: number | null;
  lat: number | null;
  lon: number | null;
}

export class SqliteListingIndex implements ListingIndex {
  readonly kind = 'sqlite' as const;
  readonly textMatching = 'stemmed' as const;
  readonly name: string;
  private readonly db: Database.Database;
  private readonly owned: boolean;
  private readonly gate?: { turn(): Promise<void> };
  private readonly statements = new Map<string, Database.Statement>();
  /** `replaceAll` fills one connection-private staging table: one at a time. */
  private replacing: Promise<unknown> = Promise.resolve();

  constructor(options: SqliteListingIndexOptions | Database.Database | string) {
    const { database, name, gate } =
      typeof options === 'string' || options instanceof Database ? { database: options } : options;
    this.gate = gate;
    this.owned = typeof database === 'string';
    this.db = typeof database === 'string' ? new Database(database) : database;
    if (this.owned) {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
    }
    this.name = name ?? 'sqlite';
    this.db.function(
      DISTANCE_FN,
      { deterministic: true },
      (lat1: unknown, lon1: unknown, lat2: unknown, lon2: unknown) =>
        typeof lat1 === 'number' && typeof lon1 === 'number'
          ? arcDistanceMetres(lat1, lon1, lat2 as number, lon2 as number)
          : null,
    );
  }

  async open(): Promise<{ created: boolean }> {
    await this.gate?.turn();
    return this.guard('open the index', () =>
      this.db
        .transaction(() => {
          const exists =
            this.db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'search_listings'").get() !==
            undefined;
          this.db.exec(SCHEMA);
          return { created: !exists };
        })
        .immediate(),
    );
  }

  async upsert(listings: readonly IndexedListing[]): Promise<void> {
    if (listings.length === 0) return;
    await this.gate?.turn();
    this.guard('write', () =>
      this.db
        .transaction(() => {
          for (const item of listings) {
            if (this.knownVersion(item.listing.id) >= item.listing.version) continue;
            this.write('search_listings', projectListing(item), item.listing);
            this.statement('DELETE FROM search_removed WHERE listing_id = ?').run(item.listing.id);
          }
        })
        .immediate(),
    );
  }

  async remove(removals: readonly ListingRemoval[]): Promise<void> {
    if (removals.length === 0) return;
    await this.gate?.turn();
    this.guard('write', () =>
      this.db
        .transaction(() => {
          for (const { id, version } of removals) {
            if (this.knownVersion(id) >= version) continue;
            const row = this.statement('DELETE FROM search_listings WHERE listing_id = ? RETURNING id').get(id) as
              { id: number } | undefined;
            if (row) {
              this.statement('DELETE FROM search_docs WHERE id = ?').run(row.id);
              this.statement('DELETE FROM search_text WHERE rowid = ?').run(row.id);
              this.statement('DELETE FROM search_geo WHERE id = ?').run(row.id);
            }
            this.statement(
              'INSERT INTO search_removed (listing_id, version) VALUES (?, ?) ON CONFLICT (listing_id) DO UPDATE SET version = excluded.version',
            ).run(id, version);
          }
        })
        .immediate(),
    );
  }

  async search(search: ListingSearch): Promise<ListingSearchResult> {
    await this.gate?.turn();
    const started = performance.now();
    const result = this.guard('search', () =>
      this.execute(
        search,
        (sql, params) => this.statement(sql).all(...params),
        (sql, params) =>
          this.statement(sql)
            .raw(true)
            .iterate(...params) as Iterable<unknown[]>,
      ),
    );
    return { ...result, tookMs: performance.now() - started };
  }

  async refresh(): Promise<void> {
    // A committed write is visible to the next query.
  }

  /**
   * Fills a staging table private to this connection (TEMP: gone if the process dies), then swaps it in
   * with one transaction: searches never see a half-built index. Writes applied meanwhile are lost with
   * the old content, as with Elasticsearch, so the caller reconciles with the store afterwards.
   */
  async replaceAll(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    const run = this.replacing.then(() => this.replace(read));
    this.replacing = run.catch(() => undefined);
    return run;
  }

  async *scanIds(): AsyncIterable<Array<{ id: string; version: number }>> {
    let after = '';
    for (;;) {
      await this.gate?.turn();
      const rows = this.guard('scan', () =>
        this.statement(
          'SELECT listing_id AS id, version FROM search_listings WHERE listing_id > ? ORDER BY listing_id LIMIT ?',
        ).all(after, SCAN_BATCH),
      ) as Array<{ id: string; version: number }>;
      if (rows.length === 0) return;
      yield rows;
      after = rows[rows.length - 1].id;
    }
  }

  async ping(): Promise<void> {
    this.guard('answer', () => this.db.prepare('SELECT 1').get());
  }

  async close(): Promise<void> {
    this.statements.clear();
    if (this.owned && this.db.open) this.db.close();
  }

  /** The query plans of every statement a search runs (tests and benchmarks check that each kind uses an index). */
  explain(search: ListingSearch): string[] {
    const plans: string[] = [];
    const plan = (sql: string, params: unknown[]): [] => {
      const rows = this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
      plans.push(sql.replace(/\s+/g, ' ').slice(0, 60), ...rows.map((r) => `  ${r.detail}`));
      return [];
    };
    this.execute(search, plan, plan);
    return plans;
  }

  /** One search, every statement through `run`. */
  private execute(search: ListingSearch, run: Run, scan: Scan): Omit<ListingSearchResult, 'tookMs'> {
    const { filters, sort } = search;
    if (sort.by === 'distance' && !filters.near) throw new Error('sorting by distance needs near');
    const match = filters.q === undefined ? undefined : matchExpression(filters.q);
    if (filters.q !== undefined && match === undefined) {
      return { items: [], total: 0, next: null, facets: Object.fromEntries(search.facets.map((f) => [f, []])) };
    }
    const where = filterWhere(search.accountId, filters);
    if (match !== undefined) where.add('l.id IN (SELECT rowid FROM search_text WHERE search_text MATCH ?)', match);

    const facets: Partial<Record<ListingFacet, FacetCount[]>> = {};
    let total: number | undefined;
    const unfiltered = Object.values(filters).every((value) => value === undefined);
    const kept = unfiltered
      ? (run('SELECT facet, value, n FROM search_counts WHERE account_id = ? AND n > 0', [
          search.accountId,
        ]) as Array<FacetRow>)
      : [];
    if (unfiltered) total = kept.reduce((sum, g) => sum + (g.facet === 'status' ? g.n : 0), 0);
    // Filtered: every facet asked for, and the total, counted here in one pass over the matches' index entries
    // (a GROUP BY would sort them all first).
    const counted =
      !unfiltered && search.facets.length > 0 ? search.facets.map(() => new Map<string, number>()) : undefined;
    if (counted) {
      const columns = search.facets.map((f) => FACET_COLUMNS[f].select).join(', ');
      let n = 0;
      for (const row of scan(`SELECT ${columns} FROM search_listings l WHERE ${where.sql}`, where.params)) {
        n++;
        for (let i = 0; i < counted.length; i++)
          counted[i].set(row[i] as string, (counted[i].get(row[i] as string) ?? 0) + 1);
      }
      total = n;
    }
    search.facets.forEach((name, i) => {
      let groups: FacetRow[];
      if (counted) groups = [...counted[i]].map(([value, n]) => ({ value, n }));
      else groups = kept.filter((g) => g.facet === name);
      facets[name] = groups
        .sort((a, b) => b.n - a.n || byValue(a.value, b.value))
        .slice(0, FACET_SIZE)
        .map((g) => ({ value: g.value, count: g.n }));
    });
    total ??=
      (run(`SELECT count(*) AS n FROM search_listings l WHERE ${where.sql}`, where.params) as Array<{ n: number }>)[0]
        ?.n ?? 0;

    const rows =
      match !== undefined && sort.by === 'relevance'
        ? this.relevancePage(search, match, run)
        : this.sortedPage(search, where, run);
    const page = rows.slice(0, search.limit);
    const last = page[page.length - 1];
    const near = filters.near;
    const docs = new Map<number, string>();
    if (page.length > 0) {
      const found = run('SELECT d.id, d.doc FROM json_each(?) j JOIN search_docs d ON d.id = j.value', [
        JSON.stringify(page.map((r) => r.rid)),
      ]);
      for (const { id, doc } of found as Array<{ id: number; doc: string }>) docs.set(id, doc);
    }
    const items = page.map((row): ListingHit => {
      const listing = JSON.parse(docs.get(row.rid)!) as Listing;
      return near && row.lat !== null && row.lon !== null
        ? { ...listing, distanceKm: distanceKm(near, { lat: row.lat, lon: row.lon }) }
        : listing;
    });
    const next: SearchAfter | null = rows.length > search.limit && last ? { value: last.value, id: last.id } : null;
    return { items, total, next, facets };
  }

  private async replace(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    await this.gate?.turn();
    this.guard('start the new index', () =>
      this.db.exec(
        `DROP TABLE IF EXISTS temp.search_staging; CREATE TEMP TABLE search_staging (id INTEGER PRIMARY KEY, ${COLUMN_TYPES}, doc TEXT NOT NULL, text TEXT NOT NULL)`,
      ),
    );
    try {
      for await (const batch of read()) {
        await this.gate?.turn();
        this.guard('fill the new index', () =>
          this.db.transaction(() => {
            for (const item of batch) this.write('temp.search_staging', projectListing(item), item.listing);
          })(),
        );
      }
      const columns = COLUMNS.join(', ');
      await this.gate?.turn();
      return this.guard('swap the new index in', () =>
        this.db
          .transaction(() => {
            this.db.exec(`
            DELETE FROM search_listings;
            DELETE FROM search_docs;
            INSERT INTO search_text (search_text) VALUES ('delete-all');
            DELETE FROM search_geo;
            INSERT INTO search_listings (id, ${columns}) SELECT id, ${columns} FROM temp.search_staging;
            INSERT INTO search_docs (id, doc) SELECT id, doc FROM temp.search_staging;
            INSERT INTO search_text (rowid, text) SELECT id, text FROM temp.search_staging;
            INSERT INTO search_geo (id, min_lat, max_lat, min_lon, max_lon) SELECT id, lat, lat, lon, lon FROM temp.search_staging WHERE lat IS NOT NULL AND lon IS NOT NULL;
            DELETE FROM search_removed WHERE listing_id IN (SELECT listing_id FROM temp.search_staging);
          `);
            // Fresh statistics for the planner: a reindex is when the data changed the most.
            this.db.exec('ANALYZE search_listings');
            return {
              indexed: (this.db.prepare('SELECT count(*) AS n FROM temp.search_staging').get() as { n: number }).n,
            };
          })
          .immediate(),
      );
    } finally {
      this.statements.clear();
      this.db.exec('DROP TABLE IF EXISTS temp.search_staging');
    }
  }

  /** Writes one listing's row (a newer version of it in the staging table) and, in the live index, its text and point. */
  private write(table: 'search_listings' | 'temp.search_staging', fields: ListingFields, listing: Listing): void {
    const staging = table !== 'search_listings';
    const columns = staging ? [...COLUMNS, 'doc', 'text'] : COLUMNS;
    const updates = columns
      .filter((c) => c !== 'listing_id')
      .map((c) => `${c} = excluded.${c}`)
      .join(', ');
    const values = rowOf(fields);
    const row = this.statement(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (listing_id) DO UPDATE SET ${updates}${staging ? ' WHERE excluded.version > version' : ''} RETURNING id`,
    ).get(...values, ...(staging ? [JSON.stringify(listing), fields.searchText] : [])) as { id: number } | undefined;
    if (staging || !row) return;
    this.statement('INSERT OR REPLACE INTO search_docs (id, doc) VALUES (?, ?)').run(row.id, JSON.stringify(listing));
    this.statement('DELETE FROM search_text WHERE rowid = ?').run(row.id);
    this.statement('INSERT INTO search_text (rowid, text) VALUES (?, ?)').run(row.id, fields.searchText);
    this.statement('DELETE FROM search_geo WHERE id = ?').run(row.id);
    if (fields.location) {
      const { lat, lon } = fields.location;
      this.statement('INSERT INTO search_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)').run(
        row.id,
        lat,
        lat,
        lon,
        lon,
      );
    }
  }

  /** The version the index holds for a listing, or its deletion's, or 0. */
  private knownVersion(id: string): number {
    const row = this.statement(
      `SELECT max(coalesce((SELECT version FROM search_listings WHERE listing_id = @id), 0), coalesce((SELECT version FROM search_removed WHERE listing_id = @id), 0)) AS v`,
    ).get({ id }) as { v: number };
    return row.v;
  }

  /** Best BM25 first (FTS5's bm25() is lower for better matches), ties by id; the FTS5 table drives the join. */
  private relevancePage(search: ListingSearch, match: string, run: Run): PageRow[] {
    const where = filterWhere(search.accountId, search.filters);
    const score = '-bm25(search_text)';
    const after = search.after;
    const keyset = after ? ` AND (${score} < ? OR (${score} = ? AND l.listing_id > ?))` : '';
    const sql = `SELECT l.id AS rid, l.listing_id AS id, ${score} AS value, l.lat, l.lon FROM search_text JOIN search_listings l ON l.id = search_text.rowid
      WHERE search_text MATCH ? AND ${where.sql}${keyset} ORDER BY value DESC, l.listing_id LIMIT ?`;
    const params = [
      match,
      ...where.params,
      ...(after ? [after.value ?? 0, after.value ?? 0, after.id] : []),
      search.limit + 1,
    ];
    return run(sql, params) as PageRow[];
  }

  /**
   * Field and distance orders, ties by id in the same direction. Listings without the value come last either
   * way: a second query over them (by id) completes a page the first one leaves short.
   */
  private sortedPage(search: ListingSearch, where: Where, run: Run): PageRow[] {
    const { sort, after, filters } = search;
    const keep = search.limit + 1;
    let expr: string;
    let exprParams: unknown[] = [];
    let direction: 'ASC' | 'DESC' = 'ASC';
    if (sort.by === 'relevance') {
      // Relevance without q: every score is 0, the order is the id's.
      expr = '0';
    } else if (sort.by === 'distance') {
      expr = `${DISTANCE_FN}(l.lat, l.lon, ?, ?) / 1000.0`;
      exprParams = [filters.near!.lat, filters.near!.lng];
      direction = sort.direction === 'desc' ? 'DESC' : 'ASC';
    } else {
      expr = SORT_COLUMNS[sort.by];
      direction = sort.direction === 'desc' ? 'DESC' : 'ASC';
    }
    const nullable = sort.by !== 'relevance' && NULLABLE.has(sort.by);
    const cmp = direction === 'ASC' ? '>' : '<';
    const select = `SELECT l.id AS rid, l.listing_id AS id, ${expr} AS value, l.lat, l.lon FROM search_listings l WHERE ${where.sql}`;
    const rows: PageRow[] = [];
    if (!after || after.value !== null || !nullable) {
      const keyset = after ? ` AND (${expr}, l.listing_id) ${cmp} (?, ?)` : '';
      const sql = `${select}${nullable ? ` AND ${expr} IS NOT NULL` : ''}${keyset} ORDER BY value ${direction}, l.listing_id ${direction} LIMIT ?`;
      const params = [
        ...exprParams,
        ...where.params,
        ...(after ? [...exprParams, after.value ?? 0, after.id] : []),
        keep,
      ];
      rows.push(...(run(sql, params) as PageRow[]));
    }
    if (nullable && rows.length < keep) {
      const keyset = after && after.value === null ? ` AND l.listing_id ${cmp} ?` : '';
      const sql = `${select} AND ${expr} IS NULL${keyset} ORDER BY l.listing_id ${direction} LIMIT ?`;
      const params = [...exprParams, ...where.params, ...(keyset ? [after!.id] : []), keep - rows.length];
      rows.push(...(run(sql, params) as PageRow[]));
    }
    return rows;
  }

  private statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** A busy or locked database (another process holds it) is worth retrying; anything else is not. */
  private guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || code === 'SQLITE_IOERR') {
        throw new SearchIndexUnavailable(`SQLite could not ${what}: ${(err as Error).message}`, { cause: err });
      }
      throw err;
    }
  }
}
