import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventPayload } from '@estate/contracts/events';
import { eventually } from '@estate/testing';
import { RetryLater, type Bus, type BusMessage } from '../src/bus';

export interface BusHarness {
  /** A connected bus; several calls give several clients of the same bus (replicas). */
  open(): Promise<Bus>;
  cleanup?(): Promise<void>;
}

type Deleted = EventPayload<'listings.listing.deleted'>;

/** How long a test waits for a delivery: both buses deliver within milliseconds, a loaded machine in seconds. */
export const WAIT = { timeoutMs: 30_000, intervalMs: 10 };

/** The behaviour every bus adapter must show. */
export function busContract(name: string, harness: () => BusHarness) {
  describe(`bus contract: ${name}`, () => {
    let h: BusHarness;
    const opened: Bus[] = [];
    let accountId = '';
    const open = async () => {
      const b = await h.open();
      opened.push(b);
      return b;
    };
    const event = (over: Partial<Deleted> = {}): Deleted => ({
      eventId: randomUUID(),
      accountId,
      listingId: `lst_${randomUUID().slice(0, 8)}`,
      version: 1,
      occurredAt: new Date().toISOString(),
      ...over,
    });
    /** Only this test's messages: streams outlive tests on a real engine. */
    const mine = (m: BusMessage<'listings.listing.deleted'>) => m.payload.accountId === accountId;

    beforeEach(() => {
      h = harness();
      accountId = `acc_${randomUUID().slice(0, 8)}`;
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((b) => b.close()));
      await h.cleanup?.();
    });

    it('delivers a published event, validated, with its subject and request id', async () => {
      const bus = await open();
      const got: BusMessage<'listings.listing.deleted'>[] = [];
      await bus.subscribe(['listings.listing.deleted'], { durable: `t-${randomUUID().slice(0, 8)}` }, async (m) => {
        if (mine(m)) got.push(m);
      });
      const e = event();
      await bus.publish('listings.listing.deleted', e, { requestId: 'req-123' });
      await eventually(() => expect(got).toHaveLength(1), WAIT);
      expect(got[0]).toMatchObject({
        subject: 'listings.listing.deleted',
        payload: e,
        requestId: 'req-123',
        deliveryCount: 1,
      });
    });

    it('refuses to publish a payload that breaks its schema', async () => {
      const bus = await open();
      await expect(bus.publish('listings.listing.deleted', { ...event(), version: 'x' } as never)).rejects.toThrow();
    });

    it("gives every durable each message once, and shares a durable's messages among its replicas", async () => {
      const a = await open();
      const b = await open();
      const shared = `shared-${randomUUID().slice(0, 8)}`;
      const other = `other-${randomUUID().slice(0, 8)}`;
      const byReplica = { a: [] as string[], b: [] as string[] };
      const otherGot: string[] = [];
      await a.subscribe(['listings.listing.deleted'], { durable: shared }, async (m) => {
        if (mine(m)) byReplica.a.push(m.payload.listingId);
      });
      await b.subscribe(['listings.listing.deleted'], { durable: shared }, async (m) => {
        if (mine(m)) byReplica.b.push(m.payload.listingId);
      });
      await a.subscribe(['listings.listing.deleted'], { durable: other }, async (m) => {
        if (mine(m)) otherGot.push(m.payload.listingId);
      });
      const events = Array.from({ length: 20 }, () => event());
      for (const e of events) await a.publish('listings.listing.deleted', e);
      await eventually(() => {
        expect(byReplica.a.length + byReplica.b.length).toBe(20);
        expect(otherGot).toHaveLength(20);
      }, WAIT);
      await sleep(200);
      const sharedIds = [...byReplica.a, ...byReplica.b].sort();
      expect(sharedIds).toEqual(events.map((e) => e.listingId).sort());
      expect(otherGot.sort()).toEqual(events.map((e) => e.listingId).sort());
    });

    it('redelivers when a handler fails, counting deliveries', async () => {
      const bus = await open();
      const counts: number[] = [];
      await bus.subscribe(
        ['listings.listing.deleted'],
        { durable: `retry-${randomUUID().slice(0, 8)}`, ackWaitMs: 2000 },
        async (m) => {
          if (!mine(m)) return;
          counts.push(m.deliveryCount);
          if (m.deliveryCount < 3) throw new RetryLater('not yet', 50);
        },
      );
      await bus.publish('listings.listing.deleted', event());
      await eventually(() => expect(counts).toHaveLength(3), { timeoutMs: 10_000, intervalMs: 10 });
      expect(counts).toEqual([1, 2, 3]);
    });

    it('handles up to `concurrency` messages at once, and the messages of one entity one at a time, in order', async () => {
      const bus = await open();
      const listings = ['a', 'b', 'c', 'd'].map((x) => `lst_${x}${randomUUID().slice(0, 6)}`);
      const seen = new Map<string, number[]>(listings.map((l) => [l, []]));
      let inFlight = 0;
      let most = 0;
      const perListing = new Map<string, number>();
      let overlapped = false;
      await bus.subscribe(
        ['listings.listing.deleted'],
        { durable: `conc-${randomUUID().slice(0, 8)}`, concurrency: 3, orderKey: (m) => m.payload.listingId },
        async (m) => {
          if (!mine(m)) return;
          const id = m.payload.listingId;
          inFlight++;
          most = Math.max(most, inFlight);
          if (perListing.get(id)) overlapped = true;
          perListing.set(id, 1);
          await sleep(40);
          seen.get(id)!.push(m.payload.version);
          perListing.set(id, 0);
          inFlight--;
        },
      );
      // Published together (the in-process bus resolves a publish once it is handled).
      await Promise.all(
        [1, 2, 3].flatMap((version) =>
          listings.map((listingId) => bus.publish('listings.listing.deleted', event({ listingId, version }))),
        ),
      );
      await eventually(() => expect([...seen.values()].flat()).toHaveLength(12), { timeoutMs: 15_000, intervalMs: 10 });
      for (const versions of seen.values()) expect(versions).toEqual([1, 2, 3]);
      expect(overlapped).toBe(false);
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(3);
    });

    it('drops a second publish with the same message id', async () => {
      const bus = await open();
      const got: string[] = [];
      await bus.subscribe(
        ['listings.listing.deleted'],
        { durable: `dedupe-${randomUUID().slice(0, 8)}` },
        async (m) => {
          if (mine(m)) got.push(m.payload.eventId);
        },
      );
      const e = event();
      const after = event();
      await bus.publish('listings.listing.deleted', e);
      await bus.publish('listings.listing.deleted', e);
      await bus.publish('listings.listing.deleted', after);
      // One consumer gets the stream in order: once the event published after them is there, so is any copy.
      await eventually(() => expect(got).toContain(after.eventId), WAIT);
      expect(got).toEqual([e.eventId, after.eventId]);
    });

    it('passes transient notifications to listeners that match, with wildcards', async () => {
      const a = await open();
      const b = await open();
      const job = `job${randomUUID().slice(0, 8)}`;
      const seen: [string, unknown][] = [];
      a.listen(`jobs.${job}.*`, (data, subject) => seen.push([subject, data]));
      a.listen(`jobs.other.>`, (data, subject) => seen.push([subject, data]));
      // A listener misses what was sent before its subscription took effect: notified until it hears.
      await eventually(() => {
        b.notify(`jobs.${job}.progress`, { processed: 1 });
        expect(seen.length).toBeGreaterThan(0);
      }, WAIT);
      // Heard by the matching listener only, as sent.
      for (const heard of seen) expect(heard).toEqual([`jobs.${job}.progress`, { processed: 1 }]);
    });

    it('lets an in-flight handler finish on close', async () => {
      const bus = await open();
      let finished = false;
      let started = false;
      await bus.subscribe(['listings.listing.deleted'], { durable: `close-${randomUUID().slice(0, 8)}` }, async (m) => {
        if (!mine(m)) return;
        started = true;
        await sleep(300);
        finished = true;
      });
      void bus.publish('listings.listing.deleted', event()).catch(() => undefined);
      await eventually(() => expect(started).toBe(true), WAIT);
      await bus.close();
      opened.splice(opened.indexOf(bus), 1);
      expect(finished).toBe(true);
    });
  });
}
