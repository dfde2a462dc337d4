import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import pino from 'pino';
import { MemoryBus } from '../src/memory.bus';
import { outboxEntry, type OutboxDoc } from '../src/outbox';
import { SqliteUnitOfWork } from '../src/sqlite.unit-of-work';
import { unitOfWorkContract } from './unit-of-work.contract';

const log = pino({ level: 'silent' });

unitOfWorkContract('sqlite', async (bus) => {
  const store = SqliteDocumentStore.open(':memory:');
  return { store, units: new SqliteUnitOfWork({ store, bus, log }), close: () => store.close() };
});

const deleted = (listingId: string, version: number) =>
  outboxEntry('listings.listing.deleted', {
    accountId: 'acc_1',
    listingId,
    version,
    occurredAt: '2025-01-01T00:00:00Z',
  });

describe('SqliteUnitOfWork: a unit is one transaction', () => {
  it('rolls back every document, event and projection of a unit that fails after writing them', async () => {
    const store = SqliteDocumentStore.open(':memory:');
    const bus = new MemoryBus(log);
    const seen: string[] = [];
    await bus.subscribe(
      ['listings.listing.deleted'],
      { durable: 't' },
      async (m) => void seen.push(m.payload.listingId),
    );
    const units = new SqliteUnitOfWork({ store, bus, log });
    const things = await store.collection<OutboxDoc>('things');
    const rows = await store.collection<{ id: string }>('rows');
    await expect(
      units.run(async (unit) => {
        await unit.insert(things, { id: 'a', version: 1 }, [deleted('a', 1)]);
        // A unit joins the unit it runs in: its writes roll back with it.
        await units.run((inner) => inner.insert(things, { id: 'b', version: 1 }, [deleted('b', 1)]));
        await unit.project(() => rows.insertOne({ id: 'row-a' }).then(() => undefined), { readYourWrites: false });
        throw new Error('refused after writing');
      }),
    ).rejects.toThrow('refused after writing');
    expect(await things.count({})).toBe(0);
    expect(await rows.count({})).toBe(0);
    expect(seen).toEqual([]);
    expect(store.database.prepare('SELECT count(*) AS n FROM "outbox$events"').get()).toEqual({ n: 0 });
    await bus.close();
    await store.close();
  });

  it('commits the units that wait for the connection together; a failing one rolls back alone', async () => {
    const store = SqliteDocumentStore.open(':memory:');
    const bus = new MemoryBus(log);
    const seen: string[] = [];
    await bus.subscribe(
      ['listings.listing.deleted'],
      { durable: 't' },
      async (m) => void seen.push(m.payload.listingId),
    );
    let transactions = 0;
    const counted = {
      database: store.database,
      transaction: <R>(fn: () => Promise<R>) => {
        transactions++;
        return store.transaction(fn);
      },
      turn: () => store.turn(),
      write: <R>(body: () => R) => store.write(body),
      statement: (sql: string) => store.statement(sql),
    };
    const units = new SqliteUnitOfWork({ store: counted, bus, log });
    const things = await store.collection<OutboxDoc>('things');
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const outcomes = await Promise.allSettled(
      ids.map((id) =>
        units.run(async (unit) => {
          await unit.insert(things, { id, version: 1 }, [deleted(id, 1)]);
          if (id === 'c') throw new Error('refused after writing');
          return id;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(transactions).toBe(1);
    expect((await things.find({}, { sort: { id: 1 } })).map((t) => t.id)).toEqual(['a', 'b', 'd', 'e']);
    await units.settled();
    expect(seen).toEqual(['a', 'b', 'd', 'e']);
    expect(store.database.prepare('SELECT count(*) AS n FROM "outbox$events"').get()).toEqual({ n: 4 });
    await bus.close();
    await store.close();
  });

  it('units started after a group ran in this turn of the event loop wait for its end and commit together', async () => {
    const store = SqliteDocumentStore.open(':memory:');
    const bus = new MemoryBus(log);
    let transactions = 0;
    const counted = {
      database: store.database,
      transaction: <R>(fn: () => Promise<R>) => {
        transactions++;
        return store.transaction(fn);
      },
      turn: () => store.turn(),
      write: <R>(body: () => R) => store.write(body),
      statement: (sql: string) => store.statement(sql),
    };
    const units = new SqliteUnitOfWork({ store: counted, bus, log });
    const things = await store.collection<OutboxDoc>('things');
    // The turn's first unit runs at once.
    await new Promise((resolve) => setImmediate(resolve));
    const ran: string[] = [];
    const insert = (id: string) =>
      units.run(async (unit) => {
        ran.push(id);
        return unit.insert(things, { id, version: 1 }, [deleted(id, 1)]);
      });
    await insert('a');
    expect(ran).toEqual(['a']);
    expect(transactions).toBe(1);
    // Later in the same turn: queued until the turn ends, each in its own tick.
    const b = insert('b');
    for (let i = 0; i < 5; i++) await new Promise((resolve) => process.nextTick(resolve));
    const c = insert('c');
    for (let i = 0; i < 5; i++) await new Promise((resolve) => process.nextTick(resolve));
    expect(ran).toEqual(['a']);
    await Promise.all([b, c]);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(transactions).toBe(2);
    expect((await things.find({}, { sort: { id: 1 } })).map((t) => t.id)).toEqual(['a', 'b', 'c']);
    await units.settled();
    await bus.close();
    await store.close();
  });

  it('deletes the rows of published events some at a time, with a later unit or the sweep', async () => {
    const store = SqliteDocumentStore.open(':memory:');
    const bus = new MemoryBus(log);
    const units = new SqliteUnitOfWork({ store, bus, log });
    const things = await store.collection<OutboxDoc>('things');
    const count = () => (store.database.prepare('SELECT count(*) AS n FROM "outbox$events"').get() as { n: number }).n;
    for (let i = 0; i < 64; i++) {
      await units.run((unit) => unit.insert(things, { id: `t${i}`, version: 1 }, [deleted(`t${i}`, 1)]));
      await units.settled();
    }
    expect(count()).toBe(64);
    // The next unit deletes the 64 published rows in its own transaction.
    await units.run((unit) => unit.insert(things, { id: 'last', version: 1 }, [deleted('last', 1)]));
    await units.settled();
    expect(count()).toBe(1);
    const republished: string[] = [];
    await units.sweep(async (entries) => void republished.push(...entries.map((e) => e.eventId)), 100);
    expect(republished).toEqual([]);
    expect(count()).toBe(0);
    await bus.close();
    await store.close();
  });
});
