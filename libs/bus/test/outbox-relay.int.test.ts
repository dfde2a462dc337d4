import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import pino from 'pino';
import type { BusMessage } from '../src/bus';
import { MemoryBus } from '../src/memory.bus';
import { OutboxRelay, outboxEntry, updateWithOutbox, withOutbox, type OutboxDoc } from '../src/outbox';
import { SqliteUnitOfWork } from '../src/sqlite.unit-of-work';

const log = pino({ level: 'silent' });
const deleted = (listingId: string, version: number) =>
  outboxEntry('listings.listing.deleted', {
    accountId: 'acc_1',
    listingId,
    version,
    occurredAt: '2025-01-01T00:00:00.000Z',
  });

describe('OutboxRelay.relayNow', () => {
  it("publishes one document's events at once and clears its outbox, leaving the others to the sweep", async () => {
    const bus = new MemoryBus(log);
    const seen: BusMessage<'listings.listing.deleted'>[] = [];
    await bus.subscribe(['listings.listing.deleted'], { durable: 'test' }, async (m) => void seen.push(m));
    const store = SqliteDocumentStore.open(':memory:');
    const col = await store.collection<OutboxDoc>('things');
    const relay = new OutboxRelay({ bus, log, units: new SqliteUnitOfWork({ store, bus, log }) });
    relay.watch('things', col);
    await col.insertOne({ id: 'a', version: 1, ...withOutbox(deleted('a', 1)) });
    await col.insertOne({ id: 'b', version: 1, ...withOutbox(deleted('b', 1)) });

    await relay.relayNow('things', 'a');
    expect(seen.map((m) => m.payload.listingId)).toEqual(['a']);
    expect(await col.findOne({ id: 'a' })).toMatchObject({ _outbox: [], _outboxPending: false });
    expect(await col.findOne({ id: 'b' })).toMatchObject({ _outboxPending: true });

    // Nothing pending: nothing published again.
    await relay.relayNow('things', 'a');
    await col.updateOne({ id: 'b' }, { ...updateWithOutbox({ $set: { version: 2 } }, deleted('b', 2)) });
    await relay.flush();
    expect(seen.map((m) => `${m.payload.listingId}@${m.payload.version}`)).toEqual(['a@1', 'b@1', 'b@2']);
    await expect(relay.relayNow('other', 'a')).rejects.toThrow(/does not watch/);
    await relay.stop();
    await bus.close();
  });
});

describe("OutboxRelay sweep through the unit of work's batch", () => {
  it('publishes every pending event in order, clears them in one commit, and keeps an event added meanwhile', async () => {
    const bus = new MemoryBus(log);
    const store = SqliteDocumentStore.open(':memory:');
    const col = await store.collection<OutboxDoc>('things');
    const seen: string[] = [];
    // A write that lands while the sweep publishes: its event must survive the clearing and go out next.
    await bus.subscribe(['listings.listing.deleted'], { durable: 'test' }, async (m) => {
      seen.push(`${m.payload.listingId}@${m.payload.version}`);
      if (m.payload.listingId === 'b' && m.payload.version === 1)
        await col.updateOne({ id: 'b' }, updateWithOutbox({ $set: { version: 2 } }, deleted('b', 2)));
    });
    const relay = new OutboxRelay({ bus, log, units: new SqliteUnitOfWork({ store, bus, log }) });
    relay.watch('things', col);
    for (const id of ['a', 'b', 'c']) await col.insertOne({ id, version: 1, ...withOutbox(deleted(id, 1)) });

    await relay.flush();
    await relay.flush();
    expect(seen).toEqual(['a@1', 'b@1', 'c@1', 'b@2']);
    expect(await col.count({ _outboxPending: true })).toBe(0);
    expect(await col.findOne({ id: 'b' })).toMatchObject({ version: 2, _outbox: [] });
    await relay.stop();
    await bus.close();
    await store.close();
  });
});
