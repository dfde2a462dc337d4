import Database from 'better-sqlite3';
import type { Listing } from '@estate/contracts/listings';
import { SqliteListingIndex } from '../src/sqlite-listing.index';
import { fieldQueryContract } from './field-query.contract';
import { listingIndexContract } from './listing-index.contract';

listingIndexContract('sqlite', () => ({ open: async () => new SqliteListingIndex(':memory:') }));
fieldQueryContract('sqlite', () => ({ open: async () => new SqliteListingIndex(':memory:') }));

describe('sqlite listing index', () => {
  const listing = (id: string, version: number): Listing => ({
    id,
    status: 'active',
    pricing: { listPrice: 100000, currency: 'USD', pricePerArea: null },
    propertyDetails: { propertyType: 'residential', livingAreaUnits: 'sqft', description: 'Garden flat' },
    location: {
      address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
      latitude: 30.2,
      longitude: -97.7,
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: null,
    version,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
  });

  it('lives in its own tables of a shared database, left open on close, and finds them again', async () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE documents (id TEXT PRIMARY KEY)');
    const first = new SqliteListingIndex({ database: db, name: 'listings' });
    expect(first.name).toBe('listings');
    expect(await first.open()).toEqual({ created: true });
    await first.upsert([{ accountId: 'acc_a', listing: listing('lst_a', 2) }]);
    await first.close();
    expect(db.open).toBe(true);

    const again = new SqliteListingIndex(db);
    expect(await again.open()).toEqual({ created: false });
    const page = await again.search({
      accountId: 'acc_a',
      filters: { q: 'gard' },
      sort: { by: 'relevance' },
      limit: 10,
      facets: [],
    });
    expect(page.items.map((l) => l.id)).toEqual(['lst_a']);
    const tables = (
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'search_%'").all() as Array<{
        name: string;
      }>
    ).map((t) => t.name);
    expect(tables).toEqual(['documents']);
    db.close();
  });

  it('answers every kind of search through an index', async () => {
    const index = new SqliteListingIndex(':memory:');
    await index.open();
    const base = { accountId: 'acc_a', sort: { by: 'createdAt', direction: 'desc' } as const, limit: 20, facets: [] };
    const kinds = [
      { filters: { minPrice: 100000, maxPrice: 200000, minBedrooms: 3 } },
      { filters: { status: ['active' as const] } },
      { filters: { city: 'Austin' } },
      {
        filters: { near: { lat: 30.2, lng: -97.7, radiusKm: 5 } },
        sort: { by: 'distance', direction: 'asc' } as const,
      },
      { filters: { bbox: { minLng: -98, minLat: 30, maxLng: -97, maxLat: 31 } } },
      { filters: { q: 'garden' }, sort: { by: 'relevance' } as const },
      { filters: {}, facets: ['status', 'propertyType', 'city'] as const },
      { filters: {}, sort: { by: 'listPrice', direction: 'asc' } as const, after: { value: 100000, id: 'lst_a' } },
    ];
    for (const kind of kinds) {
      const plan = index.explain({ ...base, ...kind });
      // A full scan of the listings table reads every account's rows.
      expect(plan.filter((line) => /SCAN l\b(?! USING)/.test(line))).toEqual([]);
    }
    await index.close();
  });
});
