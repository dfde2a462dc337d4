import type { ListingFields } from './listing-projection';

/**
 * The tables of the SQLite listing index: listing columns for filters, sorts and facets, the documents apart,
 * FTS5 text, an R*Tree of points, removal tombstones and per-account facet counts kept by triggers.
 */
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
  source TEXT, external_id TEXT, list_price REAL NOT NULL, bedrooms REAL, bathrooms REAL, living_area REAL, lat REAL, lon REAL,
  listed_at INTEGER, updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL`;

export const SCHEMA = `
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
