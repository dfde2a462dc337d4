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
import { MongoUnitOfWork } from '../src/mongo.unit-of-work';
import { OutboxRelay, type OutboxDoc } from '../src/outbox';
import { SqliteUnitOfWork } from '../src/sqlite.unit-of-work';
import type { UnitOfWork } from '../src/unit-of-work';

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
async function crashThenRecover(
  env: Record<string, string>,
  open: () => Promise<{ store: DocumentStore; bus: Bus; units: UnitOfWork }>,
) {
  const id = `lst_${randomBytes(6).toString('hex')}`;
  const res = spawnSync(process.execPath, [script], {
    env: { ...process.env, ...env, CRASH_ID: id },
    cwd: ROOT,
    timeout: 30_000,
  });
  expect(res.signal).toBe('SIGKILL');

  const { store, bus, units } = await open();
  const col = await store.collection<OutboxDoc>('things');
  expect(await col.findOne({ id })).toMatchObject({ id, version: 1 });
  const got: BusMessage<'listings.listing.deleted'>[] = [];
  await bus.subscribe(
    ['listings.listing.deleted'],
    { durable: `crash-${randomBytes(4).toString('hex')}` },
    async (m) => {
      if (m.payload.listingId === id) got.push(m);
    },
  );
  const relay = new OutboxRelay({ bus, log, intervalMs: 100, units });
  relay.watch('things', col);
  relay.start();
  try {
    await eventually(() => expect(got).toHaveLength(1), { timeoutMs: 10_000, intervalMs: 10 });
    expect(got[0]).toMatchObject({ payload: { listingId: id, accountId: 'acc_crash' }, requestId: 'req-crash' });
    await relay.flush();
    // Nothing is left to publish: a further sweep publishes nothing again.
    expect(await col.count({ _outboxPending: true })).toBe(0);
    await relay.flush();
    expect(got).toHaveLength(1);
  } finally {
    await relay.stop();
    await bus.close();
    await store.close();
  }
}

describe.each([
  ['written with its outbox in the document', {}],
  ['written through the unit of work', { CRASH_UNIT: '1' }],
])('outbox: an event survives a crash between the write and the publish (%s)', (_, mode) => {
  it('embedded: SQLite file + in-process bus', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crash-sqlite-'));
    const file = join(dir, 'things.sqlite');
    try {
      await crashThenRecover({ ...mode, CRASH_STORE: 'sqlite', CRASH_FILE: file }, async () => {
        const store = SqliteDocumentStore.open(file);
        const bus = new MemoryBus(log);
        return { store, bus, units: new SqliteUnitOfWork({ store, bus, log }) };
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithEngines('outbox crash recovery on MongoDB + NATS', ['MONGODB_URL', 'NATS_URL'], (urls) => {
  it.each([
    ['written with its outbox in the document', {}],
    ['written through the unit of work', { CRASH_UNIT: '1' }],
  ])('distributed: MongoDB + JetStream (%s)', async (_, mode) => {
    const dbName = `crash_${randomBytes(4).toString('hex')}`;
    await crashThenRecover(
      { ...mode, CRASH_STORE: 'mongo', CRASH_MONGODB_URL: urls.MONGODB_URL, CRASH_DB: dbName },
      async () => {
        const bus = await NatsBus.connect(urls.NATS_URL, { log });
        return {
          store: await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName }),
          bus,
          units: new MongoUnitOfWork({ bus, log }),
        };
      },
    );
  });
});
