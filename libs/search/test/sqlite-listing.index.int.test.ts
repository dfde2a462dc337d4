import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Listing } from '@estate/contracts/listings';
import type { ListingFilters, ListingSearch } from '../src/listing-index';
import type { SqliteCountReader } from '../src/sqlite-count-reader';
import { SqliteListingIndex } from '../src/sqlite-listing.index';
import { onlyTermWithPrefix, TextTokenizer } from '../src/sqlite-text-terms';
import { fieldQueryContract } from './field-query.contract';
import { listingIndexContract } from './listing-index.contract';

listingIndexContract('sqlite', () => ({ open: async () => new SqliteListingIndex(':memory:') }));
// A file: `q` searches count their matches on the count reader's own connection (decision 0141), same answers.
listingIndexContract('sqlite file, counting apart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-index-'));
  return {
    open: async () => new SqliteListingIndex(join(dir, 'listings.sqlite')),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
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

  // On a file, a `q` search's total comes from the count reader (decision 0141).
  describe('counting apart', () => {
    const withDescription = (id: string, description: string): Listing => {
      const l = listing(id, 1);
      return { ...l, propertyDetails: { ...l.propertyDetails, description } };
    };

    it('counts a q search’s matches apart with the totals of counting in line, and counts in line when the reader fails', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'count-apart-'));
      const db = new Database(join(dir, 'listings.sqlite'));
      db.pragma('journal_mode = WAL');
      const apart = new SqliteListingIndex({ database: db, rankWindow: 3 });
      const inline = new SqliteListingIndex({ database: db, rankWindow: 3, countApart: false });
      try {
        await apart.open();
        const words = ['garden pool', 'garden', 'pool deck', 'garden pool deck', 'quiet garden'];
        await apart.upsert(
          Array.from({ length: 25 }, (_, i) => ({
            accountId: i % 5 === 0 ? 'acc_b' : 'acc_a',
            listing: withDescription(`lst_${String(i).padStart(2, '0')}`, words[i % words.length]),
          })),
        );
        const search = (index: SqliteListingIndex, q: string, accountId = 'acc_a') =>
          index.search({ accountId, filters: { q }, sort: { by: 'relevance' }, limit: 4, facets: [] });
        for (const [q, accountId] of [
          ['garden', 'acc_a'],
          ['garden poo', 'acc_a'],
          ['deck', 'acc_b'],
          ['nothing', 'acc_a'],
        ]) {
          const [a, b] = [await search(apart, q, accountId), await search(inline, q, accountId)];
          expect(a.total).toBe(b.total);
          expect(a.items.map((l) => l.id)).toEqual(b.items.map((l) => l.id));
          expect(a.next).toEqual(b.next);
        }
        expect((await search(apart, 'garden')).total).toBe(15);

        // The reader gone (its thread failed or was closed): the same total, counted on the index's connection.
        await (apart as unknown as { counter: SqliteCountReader }).counter.close();
        expect((await search(apart, 'garden')).total).toBe(15);
      } finally {
        await apart.close();
        await inline.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
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

  it('gives a new listing that takes a removed listing’s row id none of its text or RESO values', async () => {
    const db = new Database(':memory:');
    const index = new SqliteListingIndex({ database: db, name: 'listings' });
    await index.open();
    const withText = (id: string, description: string, features: string[]): Listing => {
      const l = listing(id, 1);
      return { ...l, propertyDetails: { ...l.propertyDetails, description, features } };
    };
    await index.upsert([{ accountId: 'acc_a', listing: withText('lst_a', 'Garden flat', []) }]);
    await index.upsert([{ accountId: 'acc_a', listing: withText('lst_b', 'Harbour loft', ['pool', 'garage']) }]);
    const rowOf = (id: string) =>
      db.prepare('SELECT id FROM search_listings WHERE listing_id = ?').pluck().get(id) as number;
    const removedRow = rowOf('lst_b');
    await index.remove([{ id: 'lst_b', version: 2 }]);
    // SQLite gives the next row the largest id plus one: the removed listing's.
    await index.upsert([{ accountId: 'acc_a', listing: withText('lst_c', 'Orchard cottage', []) }]);
    expect(rowOf('lst_c')).toBe(removedRow);

    const q = async (text: string) =>
      (
        await index.search({
          accountId: 'acc_a',
          filters: { q: text },
          sort: { by: 'relevance' },
          limit: 10,
          facets: [],
        })
      ).items.map((l) => l.id);
    expect(await q('harbour')).toEqual([]);
    expect(await q('orchard')).toEqual(['lst_c']);
    expect(db.prepare('SELECT field, value FROM search_reso_values WHERE id = ?').all(removedRow)).toEqual([]);
    const poolHolders = await index.select({
      accountId: 'acc_a',
      where: { kind: 'any', field: 'X_Features', values: ['pool'] },
      order: [{ field: 'ListingKey', direction: 'asc' }],
      limit: 10,
      skip: 0,
      count: true,
    });
    expect(poolHolders).toEqual({ items: [], total: 0 });
    await index.close();
    db.close();
  });

  it('keeps its journals in memory, but stages a reindex in temporary files and then keeps them in memory again', async () => {
    const index = new SqliteListingIndex(':memory:');
    await index.open();
    const db = (index as unknown as { db: Database.Database }).db;
    const tempStore = () => db.pragma('temp_store', { simple: true });
    const MEMORY = 2;
    const FILE = 1;
    expect(tempStore()).toBe(MEMORY);
    await index.upsert([{ accountId: 'acc_a', listing: listing('lst_old', 1) }]);
    const seen: unknown[] = [];
    const result = await index.replaceAll(async function* () {
      seen.push(tempStore());
      yield [{ accountId: 'acc_a', listing: listing('lst_a', 1) }];
      seen.push(tempStore());
      yield [{ accountId: 'acc_a', listing: listing('lst_b', 1) }];
    });
    expect(result).toEqual({ indexed: 2 });
    expect(seen).toEqual([FILE, FILE]);
    expect(tempStore()).toBe(MEMORY);
    const page = await index.search({
      accountId: 'acc_a',
      filters: {},
      sort: { by: 'createdAt', direction: 'desc' },
      limit: 10,
      facets: [],
    });
    expect(page.items.map((l) => l.id).sort()).toEqual(['lst_a', 'lst_b']);

    // A reindex that fails part-way leaves the connection as it found it too.
    await expect(
      index.replaceAll(async function* () {
        yield [{ accountId: 'acc_a', listing: listing('lst_c', 1) }];
        throw new Error('the store went away');
      }),
    ).rejects.toThrow('the store went away');
    expect(tempStore()).toBe(MEMORY);
    await index.close();
  });

  /** One account's listings spread over prices (some exactly on a price band's edge), statuses, types and cities. */
  const spread = (count: number, seed: number): Listing[] => {
    let state = seed;
    const next = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
    return Array.from({ length: count }, (_, i) => {
      const base = listing(`lst_${String(i).padStart(4, '0')}`, 1);
      const price =
        next() < 0.2 ? Math.round(2 ** (Math.floor(next() * 64 + 512) / 32)) : 50000 + Math.floor(next() * 400) * 2500;
      return {
        ...base,
        status: pick(['active', 'pending', 'closed'] as const),
        pricing: { ...base.pricing, listPrice: price },
        propertyDetails: {
          ...base.propertyDetails,
          propertyType: pick(['residential', 'land'] as const),
          bedrooms: i % 5,
        },
        location: {
          ...base.location,
          address: { ...base.location.address, city: pick(['Austin', 'Dallas', 'austin', 'Round Rock']) },
          latitude: 30 + next(),
          longitude: -98 + next(),
        },
      };
    });
  };

  it('answers totals and facets from its kept counts exactly as from the matches themselves, through writes and removals', async () => {
    const index = new SqliteListingIndex(':memory:');
    await index.open();
    const listings = spread(400, 7);
    await index.upsert(listings.map((l) => ({ accountId: 'acc_a', listing: l })));
    // Changes that move listings between counted values, and removals.
    await index.upsert(
      listings.slice(0, 60).map((l, i) => ({
        accountId: 'acc_a',
        listing: {
          ...l,
          version: 2,
          status: i % 2 ? ('withdrawn' as const) : l.status,
          pricing: { ...l.pricing, listPrice: l.pricing.listPrice * 1.5 },
        },
      })),
    );
    await index.remove(listings.slice(60, 80).map((l) => ({ id: l.id, version: 2 })));
    const facets = ['status', 'propertyType', 'city'] as const;
    const ask = (filters: ListingFilters) =>
      index.search({ accountId: 'acc_a', filters, sort: { by: 'createdAt', direction: 'desc' }, limit: 5, facets });
    const prices = [0, 1, 60000, 65536, 65537, 100000, 181019, 181020, 362039, 500000, 2 ** 20, 5000000];
    const cases: ListingFilters[] = [
      {},
      { status: ['active'] },
      { status: ['active', 'withdrawn'], propertyType: ['land'] },
      { city: 'AUSTIN' },
      { city: 'austin', status: ['pending'], propertyType: ['residential'] },
      ...prices.flatMap((min) => [
        { minPrice: min },
        { maxPrice: min || 1 },
        ...prices.map((max) => ({ minPrice: min, maxPrice: max })),
      ]),
    ];
    for (const filters of cases) {
      // `updatedSince: 0` holds for every listing and takes the search off the kept counts: the matches are counted.
      const counted = await ask({ ...filters, updatedSince: 0 });
      const kept = await ask(filters);
      expect({ filters, total: kept.total, facets: kept.facets, items: kept.items }).toEqual({
        filters,
        total: counted.total,
        facets: counted.facets,
        items: counted.items,
      });
    }
    await index.close();
  });

  it('loads an empty index in bulk with the answers of one written listing by listing, and refuses one that holds listings', async () => {
    const listings = spread(300, 11).map((l) => ({ accountId: 'acc_a', listing: l }));
    const written = new SqliteListingIndex(':memory:');
    await written.open();
    await written.upsert(listings);
    const loaded = new SqliteListingIndex(':memory:');
    await loaded.open();
    expect(
      await loaded.load(async function* () {
        yield listings.slice(0, 100);
        yield listings.slice(100);
      }),
    ).toEqual({ indexed: 300 });
    const searches: Array<Partial<ListingSearch>> = [
      { filters: {}, facets: ['status', 'propertyType', 'city'] },
      { filters: { minPrice: 100000 }, facets: ['status', 'city'] },
      { filters: { status: ['active'], city: 'austin' }, facets: ['propertyType'] },
      { filters: { q: 'garden' }, sort: { by: 'relevance' } },
      { filters: { near: { lat: 30.5, lng: -97.5, radiusKm: 20 } }, sort: { by: 'distance', direction: 'asc' } },
      { filters: { bbox: { minLng: -98, minLat: 30.2, maxLng: -97.6, maxLat: 30.6 } } },
    ];
    for (const over of searches) {
      const search: ListingSearch = {
        accountId: 'acc_a',
        filters: {},
        sort: { by: 'listPrice', direction: 'asc' },
        limit: 10,
        facets: [],
        ...over,
      };
      const { tookMs: _a, ...fromLoad } = await loaded.search(search);
      const { tookMs: _b, ...fromWrites } = await written.search(search);
      expect(fromLoad).toEqual(fromWrites);
    }
    // Its indexes and count triggers are back: later writes are counted.
    await loaded.upsert([{ accountId: 'acc_a', listing: { ...listings[0].listing, version: 2, status: 'hold' } }]);
    expect(
      (
        await loaded.search({
          accountId: 'acc_a',
          filters: { status: ['hold'] },
          sort: { by: 'createdAt', direction: 'desc' },
          limit: 1,
          facets: [],
        })
      ).total,
    ).toBe(1);
    await expect(loaded.load(async function* () {})).rejects.toThrow(/empty index/);
    await Promise.all([written.close(), loaded.close()]);
  });

  it('makes its kept counts once when it opens a file indexed before them', async () => {
    const db = new Database(':memory:');
    const index = new SqliteListingIndex(db);
    await index.open();
    await index.upsert(spread(200, 13).map((l) => ({ accountId: 'acc_a', listing: l })));
    const ask = (filters: ListingFilters) =>
      index.search({
        accountId: 'acc_a',
        filters,
        sort: { by: 'createdAt', direction: 'desc' },
        limit: 3,
        facets: ['status', 'city'],
      });
    const before = [await ask({ status: ['active'] }), await ask({ minPrice: 100000 })];
    db.exec('DROP TABLE search_cube; DROP TABLE search_price_counts; DELETE FROM search_counts');
    const again = new SqliteListingIndex(db);
    expect(await again.open()).toEqual({ created: false });
    const after = [await ask({ status: ['active'] }), await ask({ minPrice: 100000 })];
    expect(after.map(({ tookMs: _, ...r }) => r)).toEqual(before.map(({ tookMs: _, ...r }) => r));
    db.close();
  });

  /**
   * The plan lines that read a whole table: a plain `SCAN <table>` (or `<schema>.<table>`) reads every row of every account. An index, a
   * virtual table's own index, the one row of a SELECT without a table and a relevance window's ranked rows are fine.
   */
  const tableScans = (plan: string[]): string[] =>
    plan.filter((line) =>
      /\bSCAN (?!CONSTANT ROW|ranked\b)(?:\w+\.)?\w+(?![\w.])(?! USING (COVERING )?INDEX| (EXISTS )?VIRTUAL TABLE INDEX)/.test(
        line,
      ),
    );

  it('answers every kind of search through an index: no statement scans a table', async () => {
    const index = new SqliteListingIndex(':memory:');
    await index.open();
    await index.load(async function* () {
      yield spread(500, 3).map((l) => ({ accountId: 'acc_a', listing: l }));
      yield spread(100, 5).map((l) => ({ accountId: 'acc_b', listing: { ...l, id: `${l.id}b` } }));
    });
    const base: ListingSearch = {
      accountId: 'acc_a',
      filters: {},
      sort: { by: 'createdAt', direction: 'desc' },
      limit: 20,
      facets: [],
    };
    const kinds: Record<string, Partial<ListingSearch>> = {
      filtered: {
        filters: {
          status: ['active', 'pending'],
          propertyType: ['residential'],
          minPrice: 100000,
          maxPrice: 500000,
          minBedrooms: 2,
        },
        sort: { by: 'listPrice', direction: 'desc' },
      },
      status: { filters: { status: ['active'] } },
      type: { filters: { propertyType: ['land'] }, sort: { by: 'listPrice', direction: 'asc' } },
      city: { filters: { city: 'Austin' }, sort: { by: 'updatedAt', direction: 'desc' } },
      near: { filters: { near: { lat: 30.5, lng: -97.5, radiusKm: 5 } }, sort: { by: 'distance', direction: 'asc' } },
      bbox: {
        filters: { bbox: { minLng: -98, minLat: 30, maxLng: -97.9, maxLat: 30.1 } },
        sort: { by: 'updatedAt', direction: 'desc' },
      },
      q: { filters: { q: 'garden flat' }, sort: { by: 'relevance' } },
      'q sorted': { filters: { q: 'garden' }, sort: { by: 'listPrice', direction: 'desc' } },
      'q near': { filters: { q: 'garden', near: { lat: 30.5, lng: -97.5, radiusKm: 5 } }, sort: { by: 'relevance' } },
      facets: { filters: { minPrice: 100000 }, facets: ['status', 'propertyType', 'city'] },
      'facets of a filtered search': { filters: { minPrice: 100000, minBedrooms: 2 }, facets: ['status', 'city'] },
      'facets unfiltered': { filters: {}, facets: ['status', 'propertyType', 'city'] },
      sorted: { filters: {}, sort: { by: 'listedAt', direction: 'desc' } },
      cursor: { filters: {}, sort: { by: 'listPrice', direction: 'asc' }, after: { value: 100000, id: 'lst_0001' } },
    };
    for (const [kind, over] of Object.entries(kinds)) {
      const plan = index.explain({ ...base, ...over });
      expect(plan.length).toBeGreaterThan(0);
      expect({ kind, scans: tableScans(plan) }).toEqual({ kind, scans: [] });
    }
    // `q` alone for an account that holds the whole index: counted and ranked from the text index.
    await index.remove(spread(100, 5).map((l) => ({ id: `${l.id}b`, version: 2 })));
    const alone = index.explain({ ...base, ...kinds.q });
    expect(alone.join('\n')).toContain('SELECT count(*) AS n FROM search_text WHERE search_text MATCH ?');
    expect(tableScans(alone)).toEqual([]);
    await index.close();
  });

  describe('relevance in windows of the matches', () => {
    /** Ten matches of `garden` for acc_a, each `garden` a different number of times in a text of the same length. */
    const times = [3, 9, 1, 6, 10, 2, 8, 5, 7, 4];
    const garden = (i: number): Listing => {
      const base = listing(`lst_${i}`, 1);
      const words = [...Array<string>(times[i]).fill('garden'), ...Array<string>(10 - times[i]).fill('porch')];
      return { ...base, propertyDetails: { ...base.propertyDetails, description: words.join(' ') } };
    };
    const pages = async (index: SqliteListingIndex, limit: number, between?: () => Promise<void>) => {
      const ids: string[] = [];
      const totals = new Set<number>();
      let after: ListingSearch['after'];
      do {
        const page = await index.search({
          accountId: 'acc_a',
          filters: { q: 'garden' },
          sort: { by: 'relevance' },
          limit,
          facets: [],
          after,
        });
        ids.push(...page.items.map((l) => l.id));
        totals.add(page.total);
        after = page.next ?? undefined;
        await between?.();
      } while (after);
      return { ids, totals: [...totals] };
    };
    /** Newest window first (four matches each: lst_6..9, lst_2..5, lst_0..1), best first within each. */
    const byWindow = [
      [6, 7, 8, 9],
      [2, 3, 4, 5],
      [0, 1],
    ].flatMap((w) => w.sort((a, b) => times[b] - times[a]).map((i) => `lst_${i}`));

    it('ranks the newest matches first, each window by BM25, and pages through every match once', async () => {
      const index = new SqliteListingIndex({ database: ':memory:', rankWindow: 4 });
      await index.open();
      // Another account's matches between them: a window counts the searching account's matches only.
      for (let i = 0; i < 10; i++)
        await index.upsert([
          { accountId: 'acc_a', listing: garden(i) },
          { accountId: 'acc_b', listing: { ...garden(i), id: `lst_b${i}` } },
        ]);
      for (const limit of [1, 3, 4, 5, 20]) expect(await pages(index, limit)).toEqual({ ids: byWindow, totals: [10] });
      await index.close();
    });

    it('keeps a paging reader on its windows while listings are added', async () => {
      const index = new SqliteListingIndex({ database: ':memory:', rankWindow: 4 });
      await index.open();
      await index.upsert(Array.from({ length: 10 }, (_, i) => ({ accountId: 'acc_a', listing: garden(i) })));
      let added = 10;
      const { ids } = await pages(index, 3, async () => {
        await index.upsert([{ accountId: 'acc_a', listing: { ...garden(0), id: `lst_${added++}` } }]);
      });
      // The first page's window took no later listing; the windows after it are below it: no item twice, none lost.
      expect(ids.slice(0, 10)).toEqual(byWindow);
      expect(new Set(ids).size).toBe(ids.length);
      await index.close();
    });

    it('is one window, exact BM25 over every match, when the matches are fewer than a window', async () => {
      const index = new SqliteListingIndex({ database: ':memory:', rankWindow: 10 });
      await index.open();
      await index.upsert(Array.from({ length: 10 }, (_, i) => ({ accountId: 'acc_a', listing: garden(i) })));
      const best = [...times.keys()].sort((a, b) => times[b] - times[a]).map((i) => `lst_${i}`);
      expect(await pages(index, 3)).toEqual({ ids: best, totals: [10] });
      await index.close();
    });

    it('orders equal scores by id, across page ends', async () => {
      for (const rankWindow of [3, 10]) {
        const index = new SqliteListingIndex({ database: ':memory:', rankWindow });
        await index.open();
        // The same text (the same score) written in an order that is not the ids'.
        for (const i of [4, 1, 5, 0, 3, 2])
          await index.upsert(
            [{ accountId: 'acc_a', listing: garden(0) }].map((l) => ({
              ...l,
              listing: { ...l.listing, id: `lst_${i}` },
            })),
          );
        const windows =
          rankWindow === 3
            ? [
                ['lst_0', 'lst_2', 'lst_3'],
                ['lst_1', 'lst_4', 'lst_5'],
              ]
            : [['lst_0', 'lst_1', 'lst_2', 'lst_3', 'lst_4', 'lst_5']];
        for (const limit of [1, 2, 4]) expect(await pages(index, limit)).toEqual({ ids: windows.flat(), totals: [6] });
        await index.close();
      }
    });
  });

  describe('the last word of q, a prefix', () => {
    const described = (id: string, description: string): Listing => {
      const base = listing(id, 1);
      return { ...base, propertyDetails: { ...base.propertyDetails, description } };
    };
    const found = async (index: SqliteListingIndex, q: string) =>
      (
        await index.search({ accountId: 'acc_a', filters: { q }, sort: { by: 'relevance' }, limit: 10, facets: [] })
      ).items
        .map((l) => l.id)
        .sort();

    it('is answered as the whole word when the index holds no longer term that starts with it, and as a prefix when it does', async () => {
      const db = new Database(':memory:');
      const index = new SqliteListingIndex(db);
      await index.open();
      const run = (sql: string, params: unknown[]) => db.prepare(sql).all(...params);
      await index.upsert([
        { accountId: 'acc_a', listing: described('lst_pool', 'Pool house, agreed price') },
        { accountId: 'acc_a', listing: described('lst_deck', 'Deck') },
      ]);
      expect(onlyTermWithPrefix('pool', run)).toBe(true);
      // `agreed` is the term `agre`, which FTS5 would cut again into `agr`: the word is kept as written, not the term.
      expect(onlyTermWithPrefix('agre', run)).toBe(true);
      expect(onlyTermWithPrefix('poo', run)).toBe(false);
      expect(onlyTermWithPrefix('garden', run)).toBe(false);
      expect(await found(index, 'pool')).toEqual(['lst_pool']);
      expect(await found(index, 'house agreed')).toEqual(['lst_pool']);
      expect(await found(index, 'po')).toEqual(['lst_pool']);

      // A longer term arrives: the prefix matches it again, from the next search on.
      await index.upsert([
        { accountId: 'acc_a', listing: described('lst_side', 'Poolside patio, agreement signed') },
        { accountId: 'acc_b', listing: described('lst_other', 'Pool') },
      ]);
      expect(onlyTermWithPrefix('pool', run)).toBe(false);
      expect(await found(index, 'pool')).toEqual(['lst_pool', 'lst_side']);
      expect(await found(index, 'agreed')).toEqual(['lst_pool', 'lst_side']);
      expect(await found(index, 'garden')).toEqual([]);
      await index.close();
      db.close();
    });

    it('ranks as the prefix does', async () => {
      const texts = ['pool pool pool', 'pool patio patio', 'pool pool patio', 'patio pool patio patio'];
      const ranked = async (extra: string) => {
        const index = new SqliteListingIndex(':memory:');
        await index.open();
        await index.upsert(texts.map((t, i) => ({ accountId: 'acc_a', listing: described(`lst_${i}`, t) })));
        await index.upsert([{ accountId: 'acc_b', listing: described('lst_b', extra) }]);
        const page = await index.search({
          accountId: 'acc_a',
          filters: { q: 'pool' },
          sort: { by: 'relevance' },
          limit: 10,
          facets: [],
        });
        await index.close();
        return page.items.map((l) => l.id);
      };
      const whole = await ranked('patio');
      expect(whole).toEqual(['lst_0', 'lst_2', 'lst_1', 'lst_3']);
      // With `pooled` in the index (another account's), the same search runs as a prefix: the same order.
      expect(await ranked('pooled')).toEqual(whole);
    });

    it('cuts a word as the text index does, and remembers the words it cut', () => {
      const tokenizer = new TextTokenizer();
      expect(tokenizer.tokens('Gardens')).toEqual(['garden']);
      expect(tokenizer.tokens('cul-de-sac')).toEqual(['cul', 'de', 'sac']);
      expect(tokenizer.tokens('naïve')).toEqual(['naiv']);
      expect(tokenizer.tokens('Gardens')).toBe(tokenizer.tokens('Gardens'));
      tokenizer.close();
    });
  });
});
