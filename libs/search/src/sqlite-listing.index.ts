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
  type FieldQuery,
  type FieldQueryResult,
  type ListingSearch,
  type ListingSearchResult,
  type RankWindow,
  type SearchAfter,
} from './listing-index';
import { propertyIndexRecord } from '@estate/reso';
import { limitSql, StatementCache } from '@estate/store/sqlite-query';
import {
  fieldQuerySql,
  RESO_SCHEMA,
  resoColumnsToAdd,
  resoRowParams,
  RESO_ROW_STATEMENTS,
  resoValueParams,
} from './sqlite-field-query';
import { arcDistanceMetres, distanceKm, projectListing, type ListingFields } from './listing-projection';
import {
  byValue,
  DISTANCE_FN,
  FACET_COLUMNS,
  filterWhere,
  matchExpression,
  NULLABLE,
  searchSource,
  SORT_COLUMNS,
  SORT_INDEXES,
  Where,
  type Source,
} from './sqlite-listing-query';
import { COLUMN_TYPES, COLUMNS, priceBucket, RECOUNT, rowOf, SCHEMA } from './sqlite-listing-schema';
import { onlyTermWithPrefix, TERMS_SCHEMA, TextTokenizer } from './sqlite-text-terms';
import { SqliteCountReader } from './sqlite-count-reader';
import { filterKey } from './listing-projection';

/**
 * The embedded profile's index in SQLite (docs/spec.md §2): indexed columns for filters, sorts and facets,
 * FTS5 for `q` (Porter stems, the last word as a prefix, BM25 ranking), a covering point index for `near` and `bbox`.
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
  /** How many matches of `q` are ranked together (decision 0134); {@link RANK_WINDOW} unless given. */
  rankWindow?: number;
  /**
   * Whether a `q` search counts its matches on a second connection of its own thread while this one ranks the page
   * (decision 0141); true unless given. An in-memory database has no second connection: it counts in line.
   */
  countApart?: boolean;
}

/** A statement that counts a search's matches. */
interface CountStatement {
  sql: string;
  params: unknown[];
}

/** A search's total, counted by the count reader while the page is ranked: its statement and its answer to come. */
interface CountApart extends CountStatement {
  total: Promise<number>;
}

/** Runs one statement of a search: for real, or to see its plan. */
type Run = (sql: string, params: unknown[]) => unknown[];
/** Runs one statement and hands its rows over one by one, as arrays of column values (many rows, no objects). */
type Scan = (sql: string, params: unknown[]) => Iterable<unknown[]>;

const SCAN_BATCH = 1000;

interface FacetRow {
  facet?: string;
  value: string;
  n: number;
}

interface PageRow {
  /** The row's key, which also keys its document, text and point. */
  rid: number;
  /** Every match's count, when the page's statement counts them. */
  total?: number;
  id: string;
  value: number | null;
  lat: number | null;
  lon: number | null;
  /** The relevance window the row was ranked in. */
  window?: RankWindow;
}

/** The versions the index holds for a listing: its row's and its deletion's (null: none). */
interface KnownVersions {
  indexed: number | null;
  removed: number | null;
}

/** The newest version the index knows of a listing, written or removed (0: none); older writes change nothing. */
const newestKnown = (known: KnownVersions): number => Math.max(known.indexed ?? 0, known.removed ?? 0);

/** The upsert of a listing's row: in the live index, and in the staging table of a rebuild (whose newer version wins). */
const UPSERT_ROW = (() => {
  const sql = (table: string, columns: readonly string[], onlyNewer: boolean) =>
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (listing_id) DO UPDATE SET ${columns
         .filter((c) => c !== 'listing_id')
         .map((c) => `${c} = excluded.${c}`)
         .join(', ')}${onlyNewer ? ' WHERE excluded.version > version' : ''} RETURNING id`;
  return {
    live: sql('search_listings', COLUMNS, false),
    staging: sql('temp.search_staging', [...COLUMNS, 'doc', 'text'], true),
  };
})();

/** How many matches of `q` are ranked together (decision 0134): a page of relevance scores at most about this many. */
export const RANK_WINDOW = 2000;

export class SqliteListingIndex implements ListingIndex {
  readonly kind = 'sqlite' as const;
  readonly textMatching = 'stemmed' as const;
  readonly name: string;
  private readonly db: Database.Database;
  private readonly owned: boolean;
  private readonly gate?: { turn(): Promise<void> };
  private readonly rankWindow: number;
  private readonly statements: StatementCache;
  private readonly tokenizer = new TextTokenizer();
  private readonly counter?: SqliteCountReader;
  /** `replaceAll` fills one connection-private staging table: one at a time. */
  private replacing: Promise<unknown> = Promise.resolve();

  constructor(options: SqliteListingIndexOptions | Database.Database | string) {
    const { database, name, gate, rankWindow, countApart } =
      typeof options === 'string' || options instanceof Database ? { database: options } : options;
    this.gate = gate;
    this.rankWindow = rankWindow ?? RANK_WINDOW;
    this.owned = typeof database === 'string';
    this.db = typeof database === 'string' ? new Database(database) : database;
    this.statements = new StatementCache(this.db);
    if (countApart !== false && !this.db.memory) this.counter = new SqliteCountReader(this.db.name);
    if (this.owned) {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      // As the document store's connections (docs/decisions/0135-sqlite-journals-in-memory.md).
      this.db.pragma('temp_store = MEMORY');
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
          const table = (name: string) =>
            this.db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;
          const exists = table('search_listings');
          const counted = table('search_cube');
          // A file made before the price bands: each row gets its band, then the counts are made once.
          if (
            exists &&
            !(this.db.prepare('PRAGMA table_info(search_listings)').all() as Array<{ name: string }>).some(
              (c) => c.name === 'price_bucket',
            )
          ) {
            this.db.exec('ALTER TABLE search_listings ADD COLUMN price_bucket INTEGER NOT NULL DEFAULT 0');
            const band = this.db.prepare('UPDATE search_listings SET price_bucket = ? WHERE id = ?');
            for (const row of this.db.prepare('SELECT id, list_price AS price FROM search_listings').all() as Array<{
              id: number;
              price: number;
            }>)
              band.run(priceBucket(row.price), row.id);
          }
          this.db.exec(SCHEMA);
          this.db.exec(TERMS_SCHEMA);
          if (exists && !counted) this.recount();
          const resoExists = table('search_reso');
          this.db.exec(RESO_SCHEMA);
          // A field indexed since the table was made: its column is added, null for the rows already there.
          const columns = (this.db.prepare('PRAGMA table_info(search_reso)').all() as Array<{ name: string }>).map(
            (c) => c.name,
          );
          for (const statement of resoColumnsToAdd(columns)) this.db.exec(statement);
          // Listings indexed before the RESO tables existed get their rows once, when the tables are made.
          if (exists && !resoExists) this.backfillReso();
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
            const known = this.known(item.listing.id);
            if (newestKnown(known) >= item.listing.version) continue;
            this.write('search_listings', projectListing(item), item.listing, known.indexed !== null);
            if (known.removed !== null)
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
            if (newestKnown(this.known(id)) >= version) continue;
            const row = this.statement('DELETE FROM search_listings WHERE listing_id = ? RETURNING id').get(id) as
              { id: number } | undefined;
            if (row) {
              this.clearReso(row.id);
              this.statement('DELETE FROM search_docs WHERE id = ?').run(row.id);
              this.statement('DELETE FROM search_text WHERE rowid = ?').run(row.id);
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
    // Every statement on this connection runs in this one turn; only the count apart is awaited.
    const { count, ...result } = this.guard('search', () =>
      this.execute(
        search,
        (sql, params) => this.statement(sql).all(...params),
        (sql, params) =>
          this.statement(sql)
            .raw(true)
            .iterate(...params) as Iterable<unknown[]>,
      ),
    );
    if (count) result.total = await this.totalOf(count);
    return { ...result, tookMs: performance.now() - started };
  }

  /** The count reader's total; if it failed, counted on this connection (which reports its own errors). */
  private async totalOf({ sql, params, total }: CountApart): Promise<number> {
    try {
      return await total;
    } catch {
      await this.gate?.turn();
      return this.guard('search', () => (this.statement(sql).get(...params) as { n: number }).n);
    }
  }

  async select(query: FieldQuery): Promise<FieldQueryResult> {
    await this.gate?.turn();
    return this.guard('search', () => {
      const { where, params, orderBy } = fieldQuerySql(query.accountId, query.where, query.order);
      const ids = this.statement(
        `SELECT r.id FROM search_reso r WHERE ${where} ORDER BY ${orderBy} ${limitSql(query.limit)} OFFSET ?`,
      )
        .pluck()
        .all(...params, query.skip) as number[];
      const docs = new Map<number, string>();
      if (ids.length > 0) {
        const found = this.statement('SELECT d.id, d.doc FROM json_each(?) j JOIN search_docs d ON d.id = j.value').all(
          JSON.stringify(ids),
        ) as Array<{ id: number; doc: string }>;
        for (const { id, doc } of found) docs.set(id, doc);
      }
      const total = query.count
        ? (this.statement(`SELECT count(*) FROM search_reso r WHERE ${where}`)
            .pluck()
            .get(...params) as number)
        : undefined;
      return {
        items: ids.map((id) => JSON.parse(docs.get(id)!) as Listing),
        ...(total !== undefined ? { total } : {}),
      };
    });
  }

  /** The query plan of a field query (tests and benchmarks check that it uses an index). */
  explainSelect(query: FieldQuery): string[] {
    const { where, params, orderBy } = fieldQuerySql(query.accountId, query.where, query.order);
    return (
      this.db
        .prepare(
          `EXPLAIN QUERY PLAN SELECT r.id FROM search_reso r WHERE ${where} ORDER BY ${orderBy} ${limitSql(query.limit)} OFFSET ?`,
        )
        .all(...params, query.skip) as Array<{ detail: string }>
    ).map((r) => r.detail);
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

  /**
   * Fills an index that holds no listing, many times faster than `upsert`: in one transaction, rows go in without
   * their secondary indexes and count triggers, which are then built once from the whole table (a sort instead of a
   * million B-tree insertions), and the counts are computed in one pass. For a first import into a new data folder
   * (and the bench's million listings); an index that already holds listings is refused.
   */
  async load(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    await this.gate?.turn();
    const held = this.guard('read the index', () =>
      this.db
        .prepare('SELECT EXISTS (SELECT 1 FROM search_listings) OR EXISTS (SELECT 1 FROM search_removed) AS n')
        .get(),
    ) as { n: number };
    if (held.n) throw new Error('load fills an empty index only: this one holds listings');
    const derived = this.db
      .prepare(
        `SELECT type, name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger') AND sql IS NOT NULL
         AND tbl_name IN ('search_listings', 'search_reso', 'search_reso_values')`,
      )
      .all() as Array<{ type: 'index' | 'trigger'; name: string; sql: string }>;
    let indexed = 0;
    // Building an index sorts the whole table: with room for it in memory the sort needs fewer passes over temp files.
    const cacheSize = this.db.pragma('cache_size', { simple: true }) as number;
    this.db.pragma('cache_size = -262144');
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const { type, name } of derived) this.db.exec(`DROP ${type.toUpperCase()} "${name}"`);
      this.statements.clear();
      const row = this.db.prepare(
        `INSERT INTO search_listings (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')}) RETURNING id`,
      );
      const doc = this.db.prepare('INSERT INTO search_docs (id, doc) VALUES (?, ?)');
      const text = this.db.prepare('INSERT INTO search_text (rowid, text) VALUES (?, ?)');
      for await (const batch of read()) {
        for (const item of batch) {
          const fields = projectListing(item);
          const { id } = row.get(...rowOf(fields)) as { id: number };
          doc.run(id, JSON.stringify(item.listing));
          text.run(id, fields.searchText);
          this.writeReso(id, fields.accountId, item.listing, false);
        }
        indexed += batch.length;
      }
      for (const { sql } of derived) this.db.exec(sql);
      this.recount();
      this.db.exec('ANALYZE search_listings; ANALYZE search_reso; ANALYZE search_reso_values');
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    } finally {
      this.statements.clear();
      this.db.pragma(`cache_size = ${cacheSize}`);
    }
    return { indexed };
  }

  async *scanIds(): AsyncIterable<Array<{ id: string; version: number }>> {
    let after = '';
    for (;;) {
      await this.gate?.turn();
      const rows = this.guard('scan', () =>
        this.statement(
          `SELECT listing_id AS id, version FROM search_listings WHERE listing_id > ? ORDER BY listing_id ${limitSql(SCAN_BATCH)}`,
        ).all(after),
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
    await this.counter?.close();
    this.statements.clear();
    this.tokenizer.close();
    if (this.owned && this.db.open) this.db.close();
  }

  /**
   * The query plans of every statement a search runs (tests and benchmarks check that each kind uses an index). The
   * statements run too, so the plans are those of the choices a search makes from what it counted.
   */
  explain(search: ListingSearch): string[] {
    const plans: string[] = [];
    const plan = (sql: string, params: unknown[]) => {
      const rows = this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
      plans.push(sql.replace(/\s+/g, ' ').slice(0, 90), ...rows.map((r) => `  ${r.detail}`));
    };
    const { count } = this.execute(
      search,
      (sql, params) => {
        plan(sql, params);
        return this.db.prepare(sql).all(...params);
      },
      (sql, params) => {
        plan(sql, params);
        return this.db
          .prepare(sql)
          .raw(true)
          .iterate(...params) as Iterable<unknown[]>;
      },
    );
    if (count) plan(count.sql, count.params);
    return plans;
  }

  /** `q` as an FTS5 query, its last word a prefix only when the index holds a longer term that starts with it. */
  private matchOf(q: string, run: Run): string | undefined {
    return matchExpression(q, (word) => {
      const term = this.tokenizer.tokens(word).at(-1);
      return term !== undefined && onlyTermWithPrefix(term, run);
    });
  }

  /**
   * One search, every statement through `run`, but the count of a `q` search ranked by relevance without facets: its
   * page does not depend on it, so the count reader counts meanwhile (`count`, awaited by the caller).
   */
  private execute(
    search: ListingSearch,
    run: Run,
    scan: Scan,
  ): Omit<ListingSearchResult, 'tookMs'> & { count?: CountApart } {
    const { filters, sort } = search;
    if (sort.by === 'distance' && !filters.near) throw new Error('sorting by distance needs near');
    const match = filters.q === undefined ? undefined : this.matchOf(filters.q, run);
    if (filters.q !== undefined && match === undefined) {
      return { items: [], total: 0, next: null, facets: Object.fromEntries(search.facets.map((f) => [f, []])) };
    }
    const source = searchSource(filters, match);
    const where = filterWhere(search.accountId, filters, source, match);
    // A geographic search's matches are few (its box bounds them): its first page and total come from one pass over
    // them (every match is read and sorted once, the count taken on the way) rather than a count and then a page.
    const onePass =
      source.driver === 'geo' &&
      search.facets.length === 0 &&
      !search.after &&
      sort.by !== 'relevance' &&
      !NULLABLE.has(sort.by);
    if (onePass) {
      const rows = this.sortedPage(search, source, where, run, true);
      return this.answer(search, rows, rows[0]?.total ?? 0, {}, run);
    }
    // `q` alone, for an account that holds every listing of the index: the text index's matches are the account's.
    const textAlone =
      source.driver === 'text' &&
      Object.entries(filters).every(([k, v]) => k === 'q' || v === undefined) &&
      this.holdsAll(search.accountId, run);
    const apart =
      this.counter && match !== undefined && sort.by === 'relevance' && search.facets.length === 0
        ? this.countStatement(source, where, textAlone)
        : undefined;
    // The reader's connection has no distance function: a search near a point counts here.
    const count: CountApart | undefined =
      apart && !apart.sql.includes(DISTANCE_FN)
        ? { ...apart, total: this.counter!.count(apart.sql, apart.params) }
        : undefined;
    // Awaited (and its failure handled) once the page is read; until then a failure is not unhandled.
    count?.total.catch(() => undefined);
    const { total, counts } = count
      ? { total: 0, counts: [] }
      : this.tally(search, source, where, run, scan, textAlone);
    const facets: Partial<Record<ListingFacet, FacetCount[]>> = {};
    search.facets.forEach((name, i) => {
      facets[name] = [...counts[i]]
        .filter(([, n]) => n > 0)
        .sort(([a, m], [b, n]) => n - m || byValue(a, b))
        .slice(0, FACET_SIZE)
        .map(([value, count]) => ({ value, count }));
    });

    let rows: PageRow[];
    if (match !== undefined && sort.by === 'relevance')
      rows = this.relevancePage(search, source, where, match, run, textAlone);
    else if (sort.by !== 'relevance' && sort.by !== 'distance' && this.walks(search, total, run)) {
      // Many matches: the sort's index, walked in order with each row tested, finds a page in a few entries per item
      // where sorting every match would read them all.
      const walk: Source = {
        from: `search_listings l INDEXED BY ${SORT_INDEXES[sort.by]}`,
        params: [],
        driver: 'walk',
      };
      rows = this.sortedPage(search, walk, filterWhere(search.accountId, filters, walk, match), run);
    } else rows = this.sortedPage(search, source, where, run);
    return { ...this.answer(search, rows, total, facets, run), ...(count ? { count } : {}) };
  }

  /** The page's documents (with their distances from `near`), and where the next page starts. */
  private answer(
    search: ListingSearch,
    rows: PageRow[],
    total: number,
    facets: Partial<Record<ListingFacet, FacetCount[]>>,
    run: Run,
  ): Omit<ListingSearchResult, 'tookMs'> {
    const page = rows.slice(0, search.limit);
    const last = page[page.length - 1];
    const near = search.filters.near;
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
    const next: SearchAfter | null =
      rows.length > search.limit && last
        ? { value: last.value, id: last.id, ...(last.window ? { window: last.window } : {}) }
        : null;
    return { items, total, next, facets };
  }

  /**
   * The total and the facet counts (one map per facet asked for), from the cheapest source that is exact: the kept
   * counts of the whole account, of status/type/city combinations, or of price bands (plus the listings of the two
   * edge bands); otherwise one pass over the matches' index entries.
   */
  private tally(
    search: ListingSearch,
    source: Source,
    where: Where,
    run: Run,
    scan: Scan,
    textAlone: boolean,
  ): { total: number; counts: Array<Map<string, number>> } {
    const { accountId, filters } = search;
    const counts = search.facets.map(() => new Map<string, number>());
    const add = (facet: string, value: string, n: number) => {
      const i = search.facets.indexOf(facet as ListingFacet);
      if (i >= 0) counts[i].set(value, (counts[i].get(value) ?? 0) + n);
    };
    const given = (Object.keys(filters) as Array<keyof ListingFilters>).filter((k) => filters[k] !== undefined);
    let total = 0;

    if (given.length === 0) {
      for (const g of run('SELECT facet, value, n FROM search_counts WHERE account_id = ? AND n > 0', [
        accountId,
      ]) as FacetRow[]) {
        if (g.facet === 'status') total += g.n;
        add(g.facet!, g.value, g.n);
      }
      return { total, counts };
    }

    if (given.every((k) => k === 'status' || k === 'propertyType' || k === 'city')) {
      const cube = new Where().add('account_id = ?', accountId);
      const list = (values: readonly string[]) => values.map(() => '?').join(', ');
      if (filters.status) cube.add(`status IN (${list(filters.status)})`, ...filters.status);
      if (filters.propertyType) cube.add(`property_type IN (${list(filters.propertyType)})`, ...filters.propertyType);
      if (filters.city !== undefined) cube.add('city_key = ?', filterKey(filters.city));
      for (const [status, type, city, n] of scan(
        `SELECT status, property_type, city, n FROM search_cube WHERE ${cube.sql} AND n > 0`,
        cube.params,
      ) as Iterable<[string, string, string, number]>) {
        total += n;
        add('status', status, n);
        add('propertyType', type, n);
        add('city', city, n);
      }
      return { total, counts };
    }

    const { minPrice, maxPrice } = filters;
    // Prices are above 0: a lower bound of 0 or less bounds nothing.
    const lo = minPrice === undefined || !(minPrice > 0) ? undefined : priceBucket(minPrice);
    const hi = maxPrice === undefined || !(maxPrice > 0) ? undefined : priceBucket(maxPrice);
    if (
      given.every((k) => k === 'minPrice' || k === 'maxPrice') &&
      (maxPrice === undefined || hi !== undefined) &&
      (lo === undefined || hi === undefined || hi - lo >= 2)
    ) {
      const wanted = ['', ...search.facets];
      for (const [facet, value, n] of scan(
        `SELECT facet, value, sum(n) FROM search_price_counts WHERE account_id = ? AND bucket > ? AND bucket < ?
         AND facet IN (${wanted.map(() => '?').join(', ')}) GROUP BY facet, value`,
        [accountId, lo ?? -1e9, hi ?? 1e9, ...wanted],
      ) as Iterable<[string, string, number]>) {
        if (facet === '') total += n;
        else add(facet, value, n);
      }
      // The edge bands, from the price index: the band's number decides, the price bounds only narrow the range read.
      const edges: Array<[number, number, number]> = [];
      if (lo !== undefined) edges.push([lo, minPrice!, Math.min(maxPrice ?? Infinity, 2 ** ((lo + 1) / 32) * 1.001)]);
      if (hi !== undefined) edges.push([hi, Math.max(minPrice ?? 0, 2 ** (hi / 32) / 1.001), maxPrice!]);
      const columns = search.facets.map((f) => FACET_COLUMNS[f].select);
      for (const [band, from, to] of edges) {
        for (const row of scan(
          `SELECT ${['1', ...columns].join(', ')} FROM search_listings l
           WHERE l.account_id = ? AND l.list_price >= ? AND l.list_price <= ? AND l.price_bucket = ?`,
          [accountId, from, to, band],
        )) {
          total++;
          search.facets.forEach((facet, i) => add(facet, row[i + 1] as string, 1));
        }
      }
      return { total, counts };
    }

    if (search.facets.length === 0) {
      const { sql, params } = this.countStatement(source, where, textAlone);
      const [row] = run(sql, params) as Array<{ n: number }>;
      return { total: row?.n ?? 0, counts };
    }
    // Every match once, through the source's index: the total, and each facet asked for counted in the same pass
    // (a GROUP BY would sort the matches first).
    const columns = search.facets.map((f) => FACET_COLUMNS[f].select).join(', ');
    for (const row of scan(`SELECT ${columns} FROM ${source.from} WHERE ${where.sql}`, [
      ...source.params,
      ...where.params,
    ])) {
      total++;
      for (let i = 0; i < counts.length; i++)
        counts[i].set(row[i] as string, (counts[i].get(row[i] as string) ?? 0) + 1);
    }
    return { total, counts };
  }

  /**
   * The statement that counts the matches when no kept count answers: from the text index alone when its matches are
   * the account's (no row read), otherwise every match once through the source's index.
   */
  private countStatement(source: Source, where: Where, textAlone: boolean): CountStatement {
    return textAlone
      ? { sql: 'SELECT count(*) AS n FROM search_text WHERE search_text MATCH ?', params: source.params }
      : {
          sql: `SELECT count(*) AS n FROM ${source.from} WHERE ${where.sql}`,
          params: [...source.params, ...where.params],
        };
  }

  private async replace(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    await this.gate?.turn();
    // The staging table holds every listing, and the swap's statements change every page of the index: both in
    // temporary files while it runs, whatever the connection keeps in memory otherwise (decision 0135). Changing it
    // drops the connection's temporary tables: the staging table is the only one, made after and dropped before.
    const tempStore = this.db.pragma('temp_store', { simple: true }) as number;
    try {
      this.guard('start the new index', () => {
        this.db.pragma('temp_store = FILE');
        this.db.exec(
          `DROP TABLE IF EXISTS temp.search_staging; CREATE TEMP TABLE search_staging (id INTEGER PRIMARY KEY, ${COLUMN_TYPES}, doc TEXT NOT NULL, text TEXT NOT NULL)`,
        );
      });
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
            INSERT INTO search_listings (id, ${columns}) SELECT id, ${columns} FROM temp.search_staging;
            INSERT INTO search_docs (id, doc) SELECT id, doc FROM temp.search_staging;
            INSERT INTO search_text (rowid, text) SELECT id, text FROM temp.search_staging;
            DELETE FROM search_removed WHERE listing_id IN (SELECT listing_id FROM temp.search_staging);
            DELETE FROM search_reso;
            DELETE FROM search_reso_values;
          `);
            // In batches: a connection cannot write while it reads a statement's rows.
            const batch = this.db.prepare(
              'SELECT id, account_id AS accountId, doc FROM temp.search_staging WHERE id > ? ORDER BY id LIMIT 1000',
            );
            for (let after = -1; ;) {
              const rows = batch.all(after) as Array<{ id: number; accountId: string; doc: string }>;
              if (rows.length === 0) break;
              for (const row of rows) this.writeReso(row.id, row.accountId, JSON.parse(row.doc) as Listing);
              after = rows[rows.length - 1].id;
            }
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
      await this.gate?.turn();
      this.db.exec('DROP TABLE IF EXISTS temp.search_staging');
      this.db.pragma(`temp_store = ${tempStore}`);
    }
  }

  /** The kept counts, made anew from the listing rows. */
  private recount(): void {
    this.db.exec(RECOUNT);
  }

  /**
   * Writes one listing's row (a newer version of it in the staging table) and, in the live index, its document, text and
   * RESO row. A listing with no row before (`replacing` false) has no old text or RESO values to delete: a row id is
   * reused only after `remove` deleted those with the row.
   */
  private write(
    table: 'search_listings' | 'temp.search_staging',
    fields: ListingFields,
    listing: Listing,
    replacing = true,
  ): void {
    const staging = table !== 'search_listings';
    const values = rowOf(fields);
    const row = this.statement(UPSERT_ROW[staging ? 'staging' : 'live']).get(
      ...values,
      ...(staging ? [JSON.stringify(listing), fields.searchText] : []),
    ) as { id: number } | undefined;
    if (staging || !row) return;
    this.statement('INSERT OR REPLACE INTO search_docs (id, doc) VALUES (?, ?)').run(row.id, JSON.stringify(listing));
    this.writeReso(row.id, fields.accountId, listing, replacing);
    if (replacing) this.statement('DELETE FROM search_text WHERE rowid = ?').run(row.id);
    this.statement('INSERT INTO search_text (rowid, text) VALUES (?, ?)').run(row.id, fields.searchText);
  }

  /** The listing's RESO row and collection values (see sqlite-field-query.ts), replacing the old ones. */
  private writeReso(id: number, accountId: string, listing: Listing, replacing = true): void {
    const sql = RESO_ROW_STATEMENTS;
    const record = propertyIndexRecord(listing);
    // A new row has no old values (and in a bulk load their index, which the deletion would need, is not built yet).
    if (replacing) this.statement(sql.clearValues).run(id);
    this.statement(sql.row).run(...resoRowParams(id, accountId, record));
    for (const params of resoValueParams(id, record)) this.statement(sql.value).run(...params);
  }

  private clearReso(id: number): void {
    const sql = RESO_ROW_STATEMENTS;
    this.statement(sql.clearValues).run(id);
    this.statement(sql.clearRow).run(id);
  }

  /** Listings indexed before the RESO tables existed get their rows once, from their documents. */
  private backfillReso(): void {
    const missing = this.db
      .prepare(
        `SELECT l.id, l.account_id AS accountId, d.doc FROM search_listings l JOIN search_docs d ON d.id = l.id
         WHERE NOT EXISTS (SELECT 1 FROM search_reso r WHERE r.id = l.id)`,
      )
      .all() as Array<{ id: number; accountId: string; doc: string }>;
    for (const row of missing) this.writeReso(row.id, row.accountId, JSON.parse(row.doc) as Listing);
  }

  /** The versions the index holds for a listing's row and for its deletion (null: none). */
  private known(id: string): KnownVersions {
    return this.statement(
      `SELECT (SELECT version FROM search_listings WHERE listing_id = @id) AS indexed,
        (SELECT version FROM search_removed WHERE listing_id = @id) AS removed`,
    ).get({ id }) as KnownVersions;
  }

  /**
   * Best BM25 first (FTS5's bm25() is lower for better matches), ties by id, within windows of the matches: the newest
   * `rankWindow` matches (by row key) are ranked first, then the next ones, so a page scores at most a window's
   * matches however many there are (decision 0134). A search with fewer matches is one window: exact BM25 over all.
   */
  private relevancePage(
    search: ListingSearch,
    source: Source,
    where: Where,
    match: string,
    run: Run,
    textAlone: boolean,
  ): PageRow[] {
    const after = search.after;
    // bm25() needs the FTS5 cursor itself: the text table is joined here by its own MATCH, whatever drives.
    const text = source.driver === 'text';
    const from = text
      ? 'search_text CROSS JOIN search_listings l ON l.id = search_text.rowid'
      : `${source.from} CROSS JOIN search_text ON search_text.rowid = l.id`;
    const matches = `SELECT l.id AS rid, l.listing_id AS id, -bm25(search_text) AS value, l.lat, l.lon
      FROM ${from} WHERE search_text MATCH ? AND ${where.sql}`;
    const filterParams = [...(text ? [] : source.params), match, ...where.params];
    const keep = search.limit + 1;
    const rows: PageRow[] = [];
    // A cursor's window is read again by its range, from the cursor's item on; a new one is the newest matches below
    // the last, ranked in the statement that finds them.
    if (after) {
      const window = after.window ?? [0, null];
      const sql = `SELECT * FROM (${matches} AND search_text.rowid >= ? AND search_text.rowid < ?)
        WHERE value < ? OR (value = ? AND id > ?) ORDER BY value DESC, id ${limitSql(keep)}`;
      const params = [...filterParams, window[0], window[1] ?? Number.MAX_SAFE_INTEGER];
      for (const row of run(sql, [...params, after.value ?? 0, after.value ?? 0, after.id]) as PageRow[])
        rows.push({ ...row, window });
      if (window[0] === 0) return rows;
    }
    // With the text index alone to test, a window is scored from it, and only the rows that can make the page (as good
    // as its last) are read for their ids.
    const windowSql = (wanted: number): string =>
      textAlone
        ? `WITH ranked AS MATERIALIZED (SELECT *, min(rid) OVER () AS low, max(rid) OVER () AS high, count(*) OVER () AS n
          FROM (SELECT search_text.rowid AS rid, -bm25(search_text) AS value FROM search_text
          WHERE search_text MATCH ? AND search_text.rowid < ? ORDER BY search_text.rowid DESC ${limitSql(this.rankWindow)}))
        SELECT ranked.rid, l.listing_id AS id, ranked.value, l.lat, l.lon, ranked.low, ranked.high, ranked.n
        FROM ranked CROSS JOIN search_listings l ON l.id = ranked.rid
        WHERE ranked.value >= coalesce((SELECT value FROM ranked ORDER BY value DESC LIMIT 1 OFFSET ?), -1e300)
        ORDER BY ranked.value DESC, id ${limitSql(wanted)}`
        : `SELECT * FROM (SELECT *, min(rid) OVER () AS low, max(rid) OVER () AS high, count(*) OVER () AS n FROM (${matches}
          AND search_text.rowid < ? ORDER BY search_text.rowid DESC ${limitSql(this.rankWindow)})) ORDER BY value DESC, id ${limitSql(wanted)}`;
    for (let to = after?.window?.[0] ?? null; rows.length < keep;) {
      const wanted = keep - rows.length;
      const found = run(
        windowSql(wanted),
        textAlone
          ? [filterParams[0], to ?? Number.MAX_SAFE_INTEGER, wanted - 1]
          : [...filterParams, to ?? Number.MAX_SAFE_INTEGER],
      ) as Array<PageRow & { low: number; high: number; n: number }>;
      if (found.length === 0) break;
      // The newest window ends at its newest match: listings added while the reader pages are above it, out of its pages.
      const [{ low, high, n }] = found;
      const window: RankWindow = [n < this.rankWindow ? 0 : low, to ?? high + 1];
      for (const { low: _low, high: _high, n: _n, ...row } of found) rows.push({ ...row, window });
      if (window[0] === 0) break;
      to = window[0];
    }
    return rows;
  }

  /**
   * Field and distance orders, ties by id in the same direction. Listings without the value come last either
   * way: a second query over them (by id) completes a page the first one leaves short.
   */
  private sortedPage(search: ListingSearch, source: Source, where: Where, run: Run, counted = false): PageRow[] {
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
    const from = source.from;
    const nullable = sort.by !== 'relevance' && NULLABLE.has(sort.by);
    const cmp = direction === 'ASC' ? '>' : '<';
    // `counted`: every row also carries the number of matches (counted before the sort and the limit).
    const select = `SELECT l.id AS rid, l.listing_id AS id, ${expr} AS value, l.lat, l.lon${counted ? ', count(*) OVER () AS total' : ''} FROM ${from} WHERE ${where.sql}`;
    const filterParams = [...exprParams, ...source.params, ...where.params];
    const rows: PageRow[] = [];
    if (!after || after.value !== null || !nullable) {
      const keyset = after ? ` AND (${expr}, l.listing_id) ${cmp} (?, ?)` : '';
      const sql = `${select}${nullable ? ` AND ${expr} IS NOT NULL` : ''}${keyset} ORDER BY value ${direction}, l.listing_id ${direction} ${limitSql(keep)}`;
      const params = [...filterParams, ...(after ? [...exprParams, after.value ?? 0, after.id] : [])];
      rows.push(...(run(sql, params) as PageRow[]));
    }
    if (nullable && rows.length < keep) {
      const keyset = after && after.value === null ? ` AND l.listing_id ${cmp} ?` : '';
      const sql = `${select} AND ${expr} IS NULL${keyset} ORDER BY l.listing_id ${direction} ${limitSql(keep - rows.length)}`;
      const params = [...filterParams, ...(keyset ? [after!.id] : [])];
      rows.push(...(run(sql, params) as PageRow[]));
    }
    return rows;
  }

  /**
   * Whether walking the sort's index beats sorting the matches: a walk reads about (page + 1) × listings / matches
   * entries (matches spread through the order), sorting reads every match.
   */
  private walks(search: ListingSearch, total: number, run: Run): boolean {
    return total * total > (search.limit + 1) * this.accountSize(search.accountId, run);
  }

  /** How many listings the account holds (its kept status counts). */
  private accountSize(accountId: string, run: Run): number {
    const [row] = run("SELECT sum(n) AS n FROM search_counts WHERE account_id = ? AND facet = 'status'", [
      accountId,
    ]) as Array<{ n: number | null }>;
    return row?.n ?? 0;
  }

  /** Whether every listing of the index is the account's (the embedded profile's usual single account). */
  private holdsAll(accountId: string, run: Run): boolean {
    // Two probes of an index that starts with the account: is there a listing of an account before it, or after it?
    const [row] = run(
      `SELECT EXISTS (SELECT 1 FROM search_listings WHERE account_id < ?)
        OR EXISTS (SELECT 1 FROM search_listings WHERE account_id > ?) AS others`,
      [accountId, accountId],
    ) as Array<{ others: number }>;
    return row?.others === 0;
  }

  private statement(sql: string): Database.Statement {
    return this.statements.get(sql);
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
