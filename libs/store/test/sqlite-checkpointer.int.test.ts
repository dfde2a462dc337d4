import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@estate/testing';
import { SqliteDocumentStore } from '../src/sqlite.document-store';
import { documentStoreContract } from './document-store.contract';

documentStoreContract('sqlite (file, checkpoints on a worker thread)', () => {
  let dir = '';
  return {
    async open() {
      dir = mkdtempSync(join(tmpdir(), 'sqlite-checkpoints-contract-'));
      return SqliteDocumentStore.open(join(dir, 'store.db'), { backgroundCheckpoints: true });
    },
    async reopen() {
      return SqliteDocumentStore.open(join(dir, 'store.db'), { backgroundCheckpoints: true });
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('sqlite store: write-ahead log checkpointed on a worker thread', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-checkpoints-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = async (store: SqliteDocumentStore, count: number) => {
    const docs = await store.collection<{ id: string; text: string }>('docs');
    for (let i = 0; i < count; i++) await docs.insertOne({ id: `d${i}`, text: 'x'.repeat(2_000) });
  };

  it('copies committed pages into the file while the committing connection only appends to the log', async () => {
    const file = join(dir, 'store.db');
    const store = SqliteDocumentStore.open(file, { backgroundCheckpoints: true });
    const other = SqliteDocumentStore.open(join(dir, 'other.db'), { backgroundCheckpoints: true });
    try {
      const before = statSync(file).size;
      // About 300 pages of log: far below the committing connection's own checkpoint (8,192 pages).
      await write(store, 300);
      await eventually(() => expect(statSync(file).size).toBeGreaterThan(before + 300 * 2_000), {
        timeoutMs: 30_000,
      });
      expect(
        (store.database.pragma('wal_autocheckpoint') as { wal_autocheckpoint: number }[])[0].wal_autocheckpoint,
      ).toBe(8192);

      // Releasing one file leaves the others checkpointed.
      await other.close();
      const grown = statSync(file).size;
      const docs = await store.collection<{ id: string; text: string }>('docs');
      for (let i = 300; i < 600; i++) await docs.insertOne({ id: `d${i}`, text: 'y'.repeat(2_000) });
      await eventually(() => expect(statSync(file).size).toBeGreaterThan(grown + 300 * 2_000), {
        timeoutMs: 30_000,
      });
    } finally {
      await other.close();
      await store.close();
    }
    // The worker's connection closed first, so the store's close was the last one: it emptied and removed the log.
    expect(existsSync(`${file}-wal`)).toBe(false);
    const reopened = SqliteDocumentStore.open(file);
    try {
      expect(await (await reopened.collection('docs')).count({})).toBe(600);
    } finally {
      await reopened.close();
    }
  });

  it("tells another connection's commits from its own and from the worker's checkpoints", async () => {
    const file = join(dir, 'store.db');
    const store = SqliteDocumentStore.open(file, { backgroundCheckpoints: true });
    const other = SqliteDocumentStore.open(file);
    try {
      const changedElsewhere = store.changesByOthers();
      const before = statSync(file).size;
      await write(store, 50);
      expect(changedElsewhere()).toBe(false);
      // The worker copies the log into the file: no content changes, so nothing to report.
      await eventually(() => expect(statSync(file).size).toBeGreaterThan(before + 50 * 2_000), { timeoutMs: 30_000 });
      expect(changedElsewhere()).toBe(false);
      await (await other.collection('docs')).insertOne({ id: 'from-elsewhere' });
      expect(changedElsewhere()).toBe(true);
      expect(changedElsewhere()).toBe(false);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('leaves checkpoints to the committing connection when not asked for', async () => {
    const file = join(dir, 'store.db');
    const store = SqliteDocumentStore.open(file);
    try {
      const before = statSync(file).size;
      await write(store, 300);
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(300 * 2_000);
      expect(statSync(file).size).toBe(before);
    } finally {
      await store.close();
    }
  });
});
