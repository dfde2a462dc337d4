import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CountReaderFailed, SqliteCountReader } from '../src/sqlite-count-reader';

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
