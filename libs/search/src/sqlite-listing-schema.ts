import type { ListingFields } from './listing-projection';

/**
 * The tables of the SQLite listing index: listing columns for filters, sorts and facets, the documents apart,
 * FTS5 text, removal tombstones and per-account facet counts kept by triggers.
 */
/** How the text index cuts text into terms, and `q` with it (sqlite-text-terms.ts). */
export const TEXT_TOKENIZER = 'porter unicode61';

/** The columns of a listing, in the order of {@link rowOf}. */
export const COLUMNS = [
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
  'price_bucket',
  'bedrooms',
  'bathrooms',
  'living_area',
  'lat',
  'lon',
  'listed_at',
  'updated_at',
  'created_at',
] as const;

export const COLUMN_TYPES = `
  listing_id TEXT NOT NULL UNIQUE, account_id TEXT NOT NULL, version INTEGER NOT NULL,
  status TEXT NOT NULL, property_type TEXT NOT NULL, city TEXT NOT NULL, city_key TEXT NOT NULL, state_key TEXT NOT NULL, postal_key TEXT NOT NULL,
  source TEXT, external_id TEXT, list_price REAL NOT NULL, price_bucket INTEGER NOT NULL, bedrooms REAL, bathrooms REAL, living_area REAL, lat REAL, lon REAL,
  listed_at INTEGER, updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL`;

/**
 * The price band a listing is counted in: 32 bands per doubling (each about 2.2 % wide), so that the counts of a
 * price range are the sums of the bands inside it plus the listings of its two edge bands, read from the price index.
 */
export const priceBucket = (price: number): number => Math.floor(Math.log2(price) * 32);

/** The facets whose counts are kept, with their columns (the city as written; its key is what filters match). */
export const COUNTED = { status: 'status', propertyType: 'property_type', city: 'city' } as const;

/**
 * Counts kept in the transaction of every row write (by triggers), so that totals and facets of the common searches
 * read a few hundred rows instead of every match: whole accounts per facet value; per status, type and city together
 * (any search filtered on those alone); per price band and facet value (any search filtered on a price range alone).
 */
const COUNT_TABLES = `
  CREATE TABLE IF NOT EXISTS search_counts (account_id TEXT NOT NULL, facet TEXT NOT NULL, value TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (account_id, facet, value)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS search_cube (account_id TEXT NOT NULL, status TEXT NOT NULL, property_type TEXT NOT NULL,
    city_key TEXT NOT NULL, city TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (account_id, status, property_type, city_key, city)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS search_cube_city ON search_cube (account_id, city_key);
  CREATE TABLE IF NOT EXISTS search_price_counts (account_id TEXT NOT NULL, bucket INTEGER NOT NULL, facet TEXT NOT NULL,
    value TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (account_id, bucket, facet, value)) WITHOUT ROWID;
`;

export const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_listings (id INTEGER PRIMARY KEY, ${COLUMN_TYPES});
  -- The documents apart: rows that filters and sorts read stay small, a page reads 20 documents, not every match's.
  CREATE TABLE IF NOT EXISTS search_docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
  -- The price order also covers the numeric filters and the facets, so that a price band is counted and faceted from
  -- the index alone (its edge bands too: the band is in it).
  DROP INDEX IF EXISTS search_listings_price;
  DROP INDEX IF EXISTS search_listings_price_facets;
  CREATE INDEX IF NOT EXISTS search_listings_price_bands ON search_listings (account_id, list_price, listing_id, price_bucket, bedrooms, bathrooms, living_area, status, property_type, city_key, city);
  CREATE INDEX IF NOT EXISTS search_listings_listed ON search_listings (account_id, listed_at, listing_id);
  CREATE INDEX IF NOT EXISTS search_listings_updated ON search_listings (account_id, updated_at, listing_id);
  CREATE INDEX IF NOT EXISTS search_listings_created ON search_listings (account_id, created_at, listing_id);
  -- Status and type lead to the price: a status (or a type and statuses) with a price band is a range of one index.
  DROP INDEX IF EXISTS search_listings_status;
  DROP INDEX IF EXISTS search_listings_type;
  CREATE INDEX IF NOT EXISTS search_listings_status_price ON search_listings (account_id, status, list_price);
  CREATE INDEX IF NOT EXISTS search_listings_type_price ON search_listings (account_id, property_type, status, list_price, bedrooms);
  -- Points by latitude with what a geographic search reads: a box is one range, counted and sorted from the index.
  CREATE INDEX IF NOT EXISTS search_listings_point ON search_listings (account_id, lat, lon, listing_id, updated_at, created_at, listed_at, list_price) WHERE lat IS NOT NULL;
  CREATE INDEX IF NOT EXISTS search_listings_city ON search_listings (account_id, city_key, city);
  CREATE INDEX IF NOT EXISTS search_listings_state ON search_listings (account_id, state_key);
  CREATE INDEX IF NOT EXISTS search_listings_postal ON search_listings (account_id, postal_key);
  CREATE INDEX IF NOT EXISTS search_listings_bedrooms ON search_listings (account_id, bedrooms);
  CREATE INDEX IF NOT EXISTS search_listings_bathrooms ON search_listings (account_id, bathrooms);
  CREATE INDEX IF NOT EXISTS search_listings_area ON search_listings (account_id, living_area);
  CREATE INDEX IF NOT EXISTS search_listings_source ON search_listings (account_id, source, external_id);
  CREATE VIRTUAL TABLE IF NOT EXISTS search_text USING fts5 (text, content='', contentless_delete=1, tokenize='${TEXT_TOKENIZER}');
  -- Files made before the point index had an R*Tree of points; nothing reads or writes it any more.
  DROP TABLE IF EXISTS search_geo;
  CREATE TABLE IF NOT EXISTS search_removed (listing_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
  ${COUNT_TABLES}
  DROP TRIGGER IF EXISTS search_counts_insert;
  DROP TRIGGER IF EXISTS search_counts_delete;
  DROP TRIGGER IF EXISTS search_counts_update;
  ${['INSERT', 'DELETE', 'UPDATE OF account_id, status, property_type, city, city_key, price_bucket'].map((event) => countTrigger(event)).join('\n')}
`;

/** The count tables, filled from the listing rows (after a bulk load, or once when a file made before them opens). */
export const RECOUNT = `
  DELETE FROM search_counts;
  ${Object.entries(COUNTED)
    .map(
      ([facet, column]) =>
        `INSERT INTO search_counts SELECT account_id, '${facet}', ${column}, count(*) FROM search_listings GROUP BY account_id, ${column};`,
    )
    .join('\n  ')}
  DELETE FROM search_cube;
  INSERT INTO search_cube SELECT account_id, status, property_type, city_key, city, count(*) FROM search_listings
    GROUP BY account_id, status, property_type, city_key, city;
  DELETE FROM search_price_counts;
  INSERT INTO search_price_counts SELECT account_id, price_bucket, '', '', count(*) FROM search_listings GROUP BY account_id, price_bucket;
  ${Object.entries(COUNTED)
    .map(
      ([facet, column]) =>
        `INSERT INTO search_price_counts SELECT account_id, price_bucket, '${facet}', ${column}, count(*) FROM search_listings GROUP BY account_id, price_bucket, ${column};`,
    )
    .join('\n  ')}
`;

function countTrigger(event: string): string {
  const name = `search_counts_${event.split(' ')[0].toLowerCase()}`;
  const change = (row: 'NEW' | 'OLD', by: 1 | -1) =>
    [
      ...Object.entries(COUNTED).map(
        ([facet, column]) =>
          `INSERT INTO search_counts VALUES (${row}.account_id, '${facet}', ${row}.${column}, ${by}) ON CONFLICT DO UPDATE SET n = n + ${by};`,
      ),
      `INSERT INTO search_cube VALUES (${row}.account_id, ${row}.status, ${row}.property_type, ${row}.city_key, ${row}.city, ${by}) ON CONFLICT DO UPDATE SET n = n + ${by};`,
      `INSERT INTO search_price_counts VALUES (${row}.account_id, ${row}.price_bucket, '', '', ${by}) ON CONFLICT DO UPDATE SET n = n + ${by};`,
      ...Object.entries(COUNTED).map(
        ([facet, column]) =>
          `INSERT INTO search_price_counts VALUES (${row}.account_id, ${row}.price_bucket, '${facet}', ${row}.${column}, ${by}) ON CONFLICT DO UPDATE SET n = n + ${by};`,
      ),
    ].join(' ');
  const body =
    event === 'INSERT'
      ? change('NEW', 1)
      : event === 'DELETE'
        ? change('OLD', -1)
        : `${change('OLD', -1)} ${change('NEW', 1)}`;
  return `CREATE TRIGGER IF NOT EXISTS ${name} AFTER ${event} ON search_listings BEGIN ${body} END;`;
}

export function rowOf(fields: ListingFields): unknown[] {
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
    priceBucket(fields.listPrice),
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
