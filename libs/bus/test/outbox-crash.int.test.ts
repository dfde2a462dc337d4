import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { describeWithEngines, eventually } from '@estate/testing';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { type DocumentStore } from '@estate/store';
import pino from 'pino';
import type { Bus, BusMessage } from '../src/bus';
import { MemoryBus } from '../src/memory.bus';
import { NatsBus } from '../src/nats.bus';
import { OutboxRelay, type OutboxDoc } from '../src/outbox';

const log = pino({ level: 'silent' });
const ROOT = join(__dirname, '..', '..', '..');
let script = '';

beforeAll(() => {
  // Inside the repo so the bundle resolves node_modules like the real processes do.
  script = join(ROOT, 'tmp', `crash-writer-${process.pid}.js`);
  buildSync({
    entryPoints: [join(__dirname, 'fixtures', 'crash-writer.ts')],
    outfile: script,
    bundle: true,
    platform: 'node',
    packages: 'external',
    absWorkingDir: ROOT,
    logLevel: 'error',
  });
});
afterAll(() => rmSync(script, { force: true }));

/** A real process writes a document with its event and is killed before publishing it; a new relay must publish it. */
async function crashThenRecover(env: Record<string, string>, open: () => Promise<{ store: DocumentStore; bus: Bus }>) {
  const id = `lst_${randomBytes(6).toString('hex')}`;
  const res = spawnSync(process.execPath, [script], {
    env: { ...process.env, ...env, CRASH_ID: id },
    cwd: ROOT,
    timeout: 30_000,
  });
  expect(res.signal).toBe('SIGKILL');

  const { store, bus } = await open();
  const col = await store.collection<OutboxDoc>('things');
  expect((await col.findOne({ id }))?._outbox).toHaveLength(1);
  const got: BusMessage<'listings.listing.deleted'>[] = [];
  await bus.subscribe(
    ['listings.listing.deleted'],
    { durable: `crash-${randomBytes(4).toString('hex')}` },
    async (m) => {
      if (m.payload.listingId === id) got.push(m);
    },
  );
  const relay = new OutboxRelay({ bus, log, intervalMs: 100 });
  relay.watch('things', col);
  relay.start();
  try {
    await eventually(() => expect(got).toHaveLength(1), { timeoutMs: 10_000, intervalMs: 10 });
    expect(got[0]).toMatchObject({ payload: { listingId: id, accountId: 'acc_crash' }, requestId: 'req-crash' });
    await relay.flush();
    expect(await col.findOne({ id })).toMatchObject({ _outbox: [], _outboxPending: false });
  } finally {
    await relay.stop();
    await bus.close();
    await store.close();
  }
}

describe('outbox: an event survives a crash between the write and the publish', () => {
  it('embedded: SQLite file + in-process bus', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crash-sqlite-'));
    const file = join(dir, 'things.sqlite');
    try {
      await crashThenRecover({ CRASH_STORE: 'sqlite', CRASH_FILE: file }, async () => ({
        store: SqliteDocumentStore.open(file),
        bus: new MemoryBus(log),
      }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithEngines('outbox crash recovery on MongoDB + NATS', ['MONGODB_URL', 'NATS_URL'], (urls) => {
  it('distributed: MongoDB + JetStream', async () => {
    const dbName = `crash_${randomBytes(4).toString('hex')}`;
    await crashThenRecover(
      { CRASH_STORE: 'mongo', CRASH_MONGODB_URL: urls.MONGODB_URL, CRASH_DB: dbName },
      async () => ({
        store: await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName }),
        bus: await NatsBus.connect(urls.NATS_URL, { log }),
      }),
    );
  });
});
