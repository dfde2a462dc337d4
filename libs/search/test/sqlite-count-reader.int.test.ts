import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Listing } from '@estate/contracts/listings';
import { CountReaderFailed, SqliteCountReader } from '../src/sqlite-count-reader';
import { SqliteListingIndex } from '../src/sqlite-listing.index';

describe('sqlite count reader', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'count-reader-'));
    file = join(dir, 'data.sqlite');
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (n INTEGER)');
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const COUNT = 'SELECT count(*) AS n FROM t WHERE n > ?';

  it('counts what is committed on the file, from its own connection', async () => {
    const reader = new SqliteCountReader(file);
    try {
      expect(await reader.count(COUNT, [0])).toBe(0);
      db.prepare('INSERT INTO t (n) VALUES (1), (2), (3)').run();
      expect(await reader.count(COUNT, [1])).toBe(2);
      // A write still open on the writer's connection is not seen.
      db.exec('BEGIN; INSERT INTO t (n) VALUES (4)');
      expect(await reader.count(COUNT, [0])).toBe(3);
      db.exec('COMMIT');
      expect(await reader.count(COUNT, [0])).toBe(4);
    } finally {
      await reader.close();
    }
  });

  it('never writes, reports a failing statement and keeps counting', async () => {
    const reader = new SqliteCountReader(file);
    try {
      db.prepare('INSERT INTO t (n) VALUES (5)').run();
      const write = reader.count('DELETE FROM t RETURNING 1', []);
      await expect(write).rejects.toBeInstanceOf(CountReaderFailed);
      await expect(write).rejects.toThrow(/readonly/);
      await expect(reader.count('SELECT count(*) FROM missing', [])).rejects.toThrow(/no such table: missing/);
      expect(await reader.count(COUNT, [0])).toBe(1);
    } finally {
      await reader.close();
    }
  });

  it('starts a new thread after its thread stopped, and refuses to count once closed', async () => {
    const reader = new SqliteCountReader(file);
    expect(await reader.count(COUNT, [0])).toBe(0);
    await (reader as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    db.prepare('INSERT INTO t (n) VALUES (1)').run();
    expect(await reader.count(COUNT, [0])).toBe(1);
    await reader.close();
    await expect(reader.count(COUNT, [0])).rejects.toThrow('the count reader is closed');
  });

  it('stops making threads once a few in a row failed, as on a file it cannot open', async () => {
    const reader = new SqliteCountReader(join(dir, 'moved-away.sqlite'));
    try {
      for (let i = 0; i < 3; i++) await expect(reader.count(COUNT, [0])).rejects.toThrow(/unable to open|exit code/);
      await expect(reader.count(COUNT, [0])).rejects.toThrow(
        'the count reader stopped after 3 threads in a row failed',
      );
    } finally {
      await reader.close();
    }
  });
});

describe('sqlite listing index, counting apart', () => {
  const listing = (id: string, description: string): Listing => ({
    id,
    status: 'active',
    pricing: { listPrice: 100000, currency: 'USD', pricePerArea: null },
    propertyDetails: { propertyType: 'residential', livingAreaUnits: 'sqft', description },
    location: {
      address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
      latitude: 30.2,
      longitude: -97.7,
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: null,
    version: 1,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
  });

  it('gives the totals of counting in line, and counts in line when the reader fails', async () => {
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
          listing: listing(`lst_${String(i).padStart(2, '0')}`, words[i % words.length]),
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
