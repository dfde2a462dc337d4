import { setTimeout as sleep } from 'node:timers/promises';
import { describeWithEngines, eventually } from '@estate/testing';
import { streams, subjects, type Subject } from '@estate/contracts/events';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pino from 'pino';
import type { Bus } from '../src/bus';
import { natsConnectOptions, NatsBus } from '../src/nats.bus';
import { busContract, WAIT } from './bus.contract';

describeWithEngines('nats bus', ['NATS_URL'], (urls) => {
  busContract('nats (NATS_URL)', () => {
    // Each open() is a separate client, like a replica. Streams outlive the test (the contract
    // filters by account); the durables it creates are deleted in cleanup, and expire on the
    // server anyway should a run die before that.
    const created = new Set<string>();
    return {
      async open(): Promise<Bus> {
        const bus = await NatsBus.connect(urls.NATS_URL, {
          log: pino({ level: 'silent' }),
          name: 'bus-contract',
          retryBaseMs: 50,
          consumerInactiveThresholdMs: 10 * 60 * 1000,
        });
        return {
          kind: bus.kind,
          publish: (s, p, o) => bus.publish(s, p, o),
          subscribe: (list, o, h) => {
            for (const s of list) created.add(`${subjects[s as Subject].stream}/${o.durable}`);
            return bus.subscribe(list, o, h);
          },
          notify: (s, d, o) => bus.notify(s, d, o),
          listen: (s, h) => bus.listen(s, h),
          ping: () => bus.ping(),
          close: () => bus.close(),
        };
      },
      async cleanup() {
        if (created.size === 0) return;
        const nc = await connect({ ...natsConnectOptions(urls.NATS_URL), name: 'bus-contract-cleanup' });
        try {
          const jsm = await jetstreamManager(nc);
          for (const key of created) {
            const [stream, durable] = key.split('/');
            await jsm.consumers.delete(stream, durable).catch(() => undefined);
          }
          created.clear();
        } finally {
          await nc.close();
        }
      },
    };
  });
});

describeWithEngines('nats bus namespaces', ['NATS_URL'], (urls) => {
  it('keeps deployments that share a server apart, and joins replicas of one deployment', async () => {
    const log = pino({ level: 'silent' });
    const suffix = Math.random().toString(36).slice(2, 8);
    const open = (namespace: string) =>
      NatsBus.connect(urls.NATS_URL, { log, namespace, consumerInactiveThresholdMs: 60_000 });
    const a1 = await open(`nsA${suffix}`);
    const a2 = await open(`nsA${suffix}`);
    const b = await open(`nsB${suffix}`);
    try {
      const got = { a: [] as string[], b: [] as string[], transientB: 0 };
      await a2.subscribe(
        ['listings.listing.deleted'],
        { durable: 'indexer' },
        async (m) => void got.a.push(m.payload.listingId),
      );
      await b.subscribe(
        ['listings.listing.deleted'],
        { durable: 'indexer' },
        async (m) => void got.b.push(m.payload.listingId),
      );
      b.listen('jobs.*.progress', () => void got.transientB++);
      const seenA: string[] = [];
      a2.listen('jobs.*.progress', (_d, subject) => void seenA.push(subject));
      await a1.publish('listings.listing.deleted', {
        eventId: `e-${suffix}`,
        accountId: 'acc',
        listingId: 'lst_a',
        version: 1,
        occurredAt: new Date().toISOString(),
      });
      // A listener misses what was sent before its subscription took effect: notified until it hears.
      await eventually(() => {
        a1.notify('jobs.j1.progress', { processed: 1 });
        expect(got.a).toHaveLength(1);
        expect(seenA.length).toBeGreaterThan(0);
      }, WAIT);
      // Nothing crosses to the other namespace (a moment for a stray message to show).
      await sleep(300);
      expect(got).toEqual({ a: ['lst_a'], b: [], transientB: 0 });
      expect(new Set(seenA)).toEqual(new Set(['jobs.j1.progress']));
    } finally {
      await Promise.all([a1.close(), a2.close(), b.close()]);
      const nc = await connect(natsConnectOptions(urls.NATS_URL));
      const jsm = await jetstreamManager(nc);
      for (const ns of [`nsA${suffix}`, `nsB${suffix}`]) {
        for (const name of Object.keys(streams)) await jsm.streams.delete(`${ns}_${name}`).catch(() => undefined);
      }
      await nc.close();
    }
  });
});
