import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { buildSync } from 'esbuild';
import { DuplicateKeyError } from '../src/document-store';
import { SqliteDocumentStore } from '../src/sqlite.document-store';
import { documentStoreContract } from './document-store.contract';

documentStoreContract('sqlite (file)', () => {
  let dir = '';
  return {
    async open() {
      dir = mkdtempSync(join(tmpdir(), 'sqlite-contract-'));
      return new SqliteDocumentStore(join(dir, 'store.db'));
    },
    async reopen() {
      return new SqliteDocumentStore(join(dir, 'store.db'));
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

interface Counter {
  id: string;
  n: number;
}

interface Doc {
  id: string;
  accountId?: string;
  createdAt?: string;
  emailKey?: string;
  tags?: unknown;
  v?: unknown;
}

const repoRoot = join(__dirname, '../../..');

/** Runs `script` in another Node process, with better-sqlite3 and the adapter bundle (`adapter`) resolvable. */
function node(script: string, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, NODE_PATH: join(repoRoot, 'node_modules'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`child exited with ${code}: ${err}`)),
    );
  });
}

describe('sqlite document store: one file, several connections and processes', () => {
  let dir = '';
  let file = '';
  const stores: SqliteDocumentStore[] = [];
  const open = () => {
    const store = new SqliteDocumentStore(file);
    stores.push(store);
    return store;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-store-'));
    file = join(dir, 'data', 'store.db');
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('two connections on one file see each other’s writes, and concurrent $inc from both lose nothing', async () => {
    const a = await open().collection<Counter>('counters');
    const b = await open().collection<Counter>('counters');
    await a.insertOne({ id: 'c', n: 0 });
    expect(await b.findOne({ id: 'c' })).toEqual({ id: 'c', n: 0 });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).updateOne({ id: 'c' }, { $inc: { n: 1 } })),
    );
    expect((await a.findOne({ id: 'c' }))!.n).toBe(100);
    expect((await b.findOne({ id: 'c' }))!.n).toBe(100);
  });

  it('keeps the page cache it is given, and SQLite’s default when none is', async () => {
    const defaultCache = new Database(':memory:').pragma('cache_size', { simple: true });
    const plain = open();
    const small = new SqliteDocumentStore(file, { cacheKiB: 4096 });
    stores.push(small);
    expect(plain.database.pragma('cache_size', { simple: true })).toBe(defaultCache);
    // A negative cache_size is KiB.
    expect(small.database.pragma('cache_size', { simple: true })).toBe(-4096);
  });

  it('updates from other processes and this one are atomic: no increment is lost', async () => {
    const bundle = join(dir, 'adapter.js');
    buildSync({
      entryPoints: [join(__dirname, '../src/sqlite.document-store.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: bundle,
      external: ['better-sqlite3'],
      logLevel: 'silent',
    });
    const counters = await open().collection<Counter>('counters');
    await counters.insertOne({ id: 'c', n: 0 });
    const perProcess = 150;
    const child = `
      const { SqliteDocumentStore } = require(process.env.ADAPTER);
      (async () => {
        const store = new SqliteDocumentStore(process.env.FILE);
        const c = await store.collection('counters');
        for (let i = 0; i < ${perProcess}; i++) await c.updateOne({ id: 'c' }, { $inc: { n: 1 } });
        await store.close();
      })().catch((err) => { console.error(err); process.exit(1); });`;
    const env = { ADAPTER: bundle, FILE: file };
    const mine = (async () => {
      for (let i = 0; i < perProcess; i++) {
        await counters.updateOne({ id: 'c' }, { $inc: { n: 1 } });
        await sleep(1);
      }
    })();
    await Promise.all([node(child, env), node(child, env), mine]);
    expect((await counters.findOne({ id: 'c' }))!.n).toBe(3 * perProcess);
  });

  it('another process reads the file while this one holds it open, even during a write transaction', async () => {
    const store = open();
    const things = await store.collection<Doc>('things', [{ fields: { accountId: 1 } }]);
    await things.insertOne({ id: 't1', accountId: 'a1' });
    const count = `
      const Database = require('better-sqlite3');
      const db = new Database(process.env.FILE, { readonly: true, timeout: 5000 });
      console.log(db.prepare("SELECT count(*) AS n FROM things WHERE json_extract(doc, '$.accountId') = 'a1'").get().n);`;
    expect(await node(count, { FILE: file })).toBe('1');
    await store.transaction(async () => {
      await things.insertOne({ id: 't2', accountId: 'a1' });
      // The reader is not blocked by the open write transaction and sees the last committed state.
      expect(await node(count, { FILE: file })).toBe('1');
    });
    expect(await node(count, { FILE: file })).toBe('2');
  });

  it('a transaction commits its writes together or rolls them all back, and other operations wait for it', async () => {
    const store = open();
    const things = await store.collection<Doc>('things');
    await expect(
      store.transaction(async () => {
        await things.insertOne({ id: 'r1' });
        await things.insertOne({ id: 'r2' });
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(await things.count({})).toBe(0);
    let insideDone = false;
    const committed = store.transaction(async () => {
      await things.insertOne({ id: 'c1' });
      await sleep(30);
      await things.insertOne({ id: 'c2' });
      insideDone = true;
    });
    // Called outside the transaction while it is open: waits for it, so it never sees half of it.
    const outsideSawInside = await things.count({});
    expect(insideDone).toBe(true);
    await committed;
    expect(outsideSawInside).toBe(2);
    expect(
      await open()
        .collection<Doc>('things')
        .then((c) => c.count({})),
    ).toBe(2);
  });

  it('answers an indexed equality and an indexed sort from the indexes', async () => {
    const things = await open().collection<Doc>('things', [
      { fields: { emailKey: 1 }, unique: true, sparse: true },
      { fields: { accountId: 1, createdAt: -1 } },
    ]);
    for (let i = 0; i < 50; i++) {
      await things.insertOne({
        id: `t${i}`,
        accountId: `a${i % 5}`,
        createdAt: `2024-01-${String(i % 28).padStart(2, '0')}`,
        emailKey: `e${i}`,
      });
    }
    const byKey = await things.queryPlan({ emailKey: 'e7' });
    expect(byKey.join('\n')).toMatch(/SEARCH things USING INDEX .*emailKey/);
    const page = await things.queryPlan({ accountId: 'a1' }, { sort: { createdAt: -1 }, limit: 5 });
    expect(page.join('\n')).toMatch(/SEARCH things USING INDEX .*accountId/);
    expect(page.join('\n')).not.toMatch(/TEMP B-TREE/);
    expect((await things.find({ accountId: 'a1' }, { sort: { createdAt: -1 }, limit: 2 })).map((t) => t.id)).toEqual([
      't26',
      't21',
    ]);
  });

  it('matches array members on an indexed field, still through the index', async () => {
    const things = await open().collection<Doc>('things', [{ fields: { tags: 1 } }]);
    await things.insertOne({ id: 's', tags: 'pool' });
    expect((await things.queryPlan({ tags: 'pool' })).join('\n')).not.toMatch(/MULTI-INDEX OR/);
    await things.insertOne({ id: 'a', tags: ['pool', 'garage'] });
    await things.insertOne({ id: 'n', tags: ['garage'] });
    const ids = async (f: Record<string, unknown>) => (await things.find(f, { sort: { id: 1 } })).map((t) => t.id);
    expect(await ids({ tags: 'pool' })).toEqual(['a', 's']);
    expect(await ids({ tags: { $in: ['garage', 'x'] } })).toEqual(['a', 'n']);
    expect(await ids({ tags: { $nin: ['pool'] } })).toEqual(['n']);
    expect((await things.queryPlan({ tags: 'pool' })).join('\n')).toMatch(/USING INDEX/);
    // A second connection learns about the arrays from the data, not from what it wrote itself.
    expect(
      (await (await open().collection<Doc>('things', [{ fields: { tags: 1 } }])).find({ tags: 'garage' })).length,
    ).toBe(2);
  });

  it('findOne by an indexed equality finds direct and member matches, and honours the other conditions', async () => {
    const things = await open().collection<Doc>('things', [{ fields: { tags: 1 } }, { fields: { emailKey: 1 } }]);
    await things.insertOne({ id: 'd', tags: 'pool', emailKey: 'e1' });
    await things.insertOne({ id: 'm', tags: ['spa', 'garage'], emailKey: 'e2' });
    await things.insertOne({ id: 'r', tags: 'gym', emailKey: 'e3', v: 'revoked' });
    // Before any query has seen the arrays: a negation must still look into them.
    expect(await things.findOne({ tags: { $ne: 'spa' }, emailKey: 'e2' })).toBeNull();
    expect((await things.findOne({ tags: 'pool' }))?.id).toBe('d');
    // No direct match: found as a member of an array.
    expect((await things.findOne({ tags: 'garage' }))?.id).toBe('m');
    expect((await things.findOne({ tags: 'garage', emailKey: 'e2' }))?.id).toBe('m');
    expect(await things.findOne({ tags: 'garage', emailKey: 'e1' })).toBeNull();
    expect((await things.findOne({ tags: 'gym', v: { $exists: true } }))?.id).toBe('r');
    expect(await things.findOne({ tags: 'gym', v: { $exists: false } })).toBeNull();
    expect(await things.findOne({ tags: 'sauna' })).toBeNull();
  });

  it('a query that probes for arrays sees the data of its probe, whatever another connection commits in between', async () => {
    const store = open();
    const things = await store.collection<Doc>('things', [{ fields: { tags: 1 } }]);
    await things.insertOne({ id: 'p', tags: 'pool' });
    const other = open().database;
    // Once the probe has found no arrays, the other connection makes `p` hold one, before the query runs.
    const statement = store.statement.bind(store);
    let probed = false;
    let wrote = false;
    jest.spyOn(store, 'statement').mockImplementation((sql) => {
      if (probed && !wrote && sql.startsWith('SELECT id, doc')) {
        other.prepare(`UPDATE things SET doc = json_set(doc, '$.tags', json('["pool","spa"]')) WHERE id = 'p'`).run();
        wrote = true;
      }
      if (sql.includes('= 1 LIMIT 1')) probed = true;
      return statement(sql);
    });
    // The query sees `p` as the probe did (a scalar): without one snapshot it would see an array and not look inside.
    expect((await things.find({ tags: 'pool' })).map((t) => t.id)).toEqual(['p']);
    expect(wrote).toBe(true);
    jest.restoreAllMocks();
    expect(await things.findOne({ tags: 'spa' })).toMatchObject({ id: 'p', tags: ['pool', 'spa'] });
  });

  it('keeps JSON types apart: numbers and strings, booleans and numbers, null and missing', async () => {
    for (const indexes of [[], [{ fields: { v: 1 as const } }]]) {
      const things = await open().collection<Doc>(`types_${indexes.length}`, indexes);
      for (const [id, v] of [
        ['num', 1],
        ['str', '1'],
        ['true', true],
        ['false', false],
        ['null', null],
        ['obj', { a: 1 }],
      ] as const) {
        await things.insertOne({ id, v });
      }
      await things.insertOne({ id: 'missing' });
      const ids = async (f: Record<string, unknown>) =>
        (await things.find(f, { sort: { id: 1 } })).map((t) => t.id).join(',');
      expect(await ids({ v: 1 })).toBe('num');
      expect(await ids({ v: '1' })).toBe('str');
      expect(await ids({ v: true })).toBe('true');
      expect(await ids({ v: false })).toBe('false');
      expect(await ids({ v: null })).toBe('missing,null');
      expect(await ids({ v: { a: 1 } })).toBe('obj');
      expect(await ids({ v: { $exists: false } })).toBe('missing');
      expect(await ids({ v: { $exists: true } })).toBe('false,null,num,obj,str,true');
      expect(await ids({ v: { $ne: true } })).toBe('false,missing,null,num,obj,str');
      expect(await ids({ v: { $gte: 0 } })).toBe('num');
      expect(await ids({ v: { $gte: '' } })).toBe('str');
      expect(await ids({ v: { $in: [1, true] } })).toBe('num,true');
      expect((await things.find({}, { sort: { v: 1, id: 1 } })).map((t) => t.id).join(',')).toBe(
        'missing,null,num,str,obj,false,true',
      );
    }
  });

  it('adds the columns and indexes of new index declarations to an existing collection', async () => {
    const before = await open().collection<Doc>('things', [{ fields: { accountId: 1 } }]);
    await before.insertOne({ id: 't1', accountId: 'a1', emailKey: 'k1' });
    const after = await open().collection<Doc>('things', [
      { fields: { accountId: 1 } },
      { fields: { emailKey: 1 }, unique: true },
    ]);
    expect((await after.queryPlan({ emailKey: 'k1' })).join('\n')).toMatch(/USING INDEX .*emailKey/);
    expect((await after.findOne({ emailKey: 'k1' }))!.id).toBe('t1');
    await expect(after.insertOne({ id: 't2', emailKey: 'k1' })).rejects.toBeInstanceOf(DuplicateKeyError);
    // The older connection is held to the new unique index as well.
    await expect(before.insertOne({ id: 't3', emailKey: 'k1' })).rejects.toBeInstanceOf(DuplicateKeyError);
  });
});
