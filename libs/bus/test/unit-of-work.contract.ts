import { randomBytes } from 'node:crypto';
import { DuplicateKeyError, type DocumentCollection, type DocumentStore } from '@estate/store';
import pino from 'pino';
import type { Bus, BusMessage } from '../src/bus';
import { MemoryBus } from '../src/memory.bus';
import { notDeleted, OutboxRelay, outboxEntry, type OutboxDoc } from '../src/outbox';
import type { UnitOfWork } from '../src/unit-of-work';

const log = pino({ level: 'silent' });

interface Thing extends OutboxDoc {
  n: number;
}

export interface UnitOfWorkFixture {
  store: DocumentStore;
  units: UnitOfWork;
  close(): Promise<void>;
}

/** An adapter under test, over `bus`; `open` is called once per test. */
export type OpenUnitOfWork = (bus: Bus) => Promise<UnitOfWorkFixture>;

const deleted = (listingId: string, version: number) =>
  outboxEntry('listings.listing.deleted', {
    accountId: 'acc_1',
    listingId,
    version,
    occurredAt: new Date().toISOString(),
  });

/** A bus whose next `failures` publishes fail, as an engine away would. */
class FlakyBus extends MemoryBus {
  failures = 0;
  override async publish(...args: Parameters<MemoryBus['publish']>): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('bus away');
    }
    return super.publish(...args);
  }
}

/**
 * The unit-of-work contract (docs/decisions/0126-unit-of-work.md): what every adapter guarantees a service. A unit
 * whose document write fails leaves neither document nor event; a committed unit's events are published, in order,
 * once it committed (`settled`); what could not be published is the relay's, which publishes it once.
 */
export function unitOfWorkContract(name: string, open: OpenUnitOfWork): void {
  describe(`unit of work contract: ${name}`, () => {
    let bus: FlakyBus;
    let fixture: UnitOfWorkFixture;
    let col: DocumentCollection<Thing>;
    let seen: string[];

    beforeEach(async () => {
      bus = new FlakyBus(log);
      seen = [];
      await bus.subscribe(['listings.listing.deleted'], { durable: 'contract' }, async (m) => {
        seen.push(`${m.payload.listingId}@${m.payload.version}`);
      });
      fixture = await open(bus);
      col = await fixture.store.collection<Thing>(`things_${randomBytes(4).toString('hex')}`);
    });
    afterEach(async () => {
      await bus.close();
      await fixture.close();
    });

    /** What the relay still finds to publish: a committed unit leaves nothing. */
    async function leftForTheRelay(): Promise<string[]> {
      const before = seen.length;
      const relay = new OutboxRelay({ bus, log, units: fixture.units });
      relay.watch('things', col);
      await relay.flush();
      await relay.stop();
      return seen.slice(before);
    }

    it('commits a document with its events and publishes them, in order', async () => {
      await fixture.units.run((unit) =>
        unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1), deleted('a', 2)]),
      );
      await fixture.units.settled();
      expect(seen).toEqual(['a@1', 'a@2']);
      expect(await col.findOne({ id: 'a' })).toMatchObject({ id: 'a', n: 1 });
      await fixture.units.run((unit) =>
        unit.update(col, { id: 'a', version: 1 }, { $set: { version: 2, n: 2 } }, [deleted('a', 3)]),
      );
      await fixture.units.settled();
      expect(seen).toEqual(['a@1', 'a@2', 'a@3']);
      expect(await leftForTheRelay()).toEqual([]);
    });

    it('writes several documents in one unit and publishes the events of each', async () => {
      await fixture.units.run(async (unit) => {
        await unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]);
        await unit.insert(col, { id: 'b', version: 1, n: 1 }, [deleted('b', 1)]);
      });
      await fixture.units.settled();
      expect(seen).toEqual(['a@1', 'b@1']);
      expect(await col.count({})).toBe(2);
      expect(await leftForTheRelay()).toEqual([]);
    });

    it('a write that fails leaves neither document nor event', async () => {
      await fixture.units.run((unit) => unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]));
      await fixture.units.settled();
      await expect(
        fixture.units.run((unit) => unit.insert(col, { id: 'a', version: 1, n: 2 }, [deleted('a', 9)])),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      await fixture.units.settled();
      expect(await col.findOne({ id: 'a' })).toMatchObject({ n: 1 });
      expect(await leftForTheRelay()).toEqual([]);
      expect(seen).toEqual(['a@1']);
    });

    it('an update that matches nothing (a lost compare-and-set) writes nothing and has no event', async () => {
      await fixture.units.run((unit) => unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]));
      await fixture.units.settled();
      const lost = await fixture.units.run((unit) =>
        unit.update(col, { id: 'a', version: 7 }, { $set: { version: 8, n: 8 } }, [deleted('a', 8)]),
      );
      await fixture.units.settled();
      expect(lost).toBeNull();
      expect(await col.findOne({ id: 'a' })).toMatchObject({ version: 1, n: 1 });
      expect(await leftForTheRelay()).toEqual([]);
      expect(seen).toEqual(['a@1']);
    });

    it('removes a document with its event: gone for readers, the event published once', async () => {
      await fixture.units.run((unit) => unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]));
      await fixture.units.settled();
      const removed = await fixture.units.run((unit) =>
        unit.remove(col, { id: 'a', version: 1 }, { $set: { version: 2 } }, [deleted('a', 2)]),
      );
      await fixture.units.settled();
      expect(removed).toBe(true);
      expect(await col.findOne({ id: 'a', ...notDeleted })).toBeNull();
      expect(await leftForTheRelay()).toEqual([]);
      expect(seen).toEqual(['a@1', 'a@2']);
      // Once its events are out, the document is gone from the store too.
      expect(await col.findOne({ id: 'a' })).toBeNull();
    });

    it('a committed unit whose publish failed keeps its events for the relay, which publishes them once', async () => {
      bus.failures = 1;
      await fixture.units.run((unit) => unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]));
      await fixture.units.settled();
      expect(seen).toEqual([]);
      expect(await col.findOne({ id: 'a' })).toMatchObject({ n: 1 });
      expect(await leftForTheRelay()).toEqual(['a@1']);
      expect(await leftForTheRelay()).toEqual([]);
    });

    it('writes a projection a client waits for; the unit resolves with what work returned', async () => {
      const projected: string[] = [];
      const result = await fixture.units.run(async (unit) => {
        await unit.insert(col, { id: 'a', version: 1, n: 1 }, [deleted('a', 1)]);
        await unit.project(async () => void projected.push('a'), { readYourWrites: true });
        return 'done';
      });
      expect(result).toBe('done');
      expect(projected).toEqual(['a']);
    });
  });
}

export type { BusMessage };
