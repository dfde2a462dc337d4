import { describeWithEngines } from '@estate/testing';
import { subjects, type Subject } from '@estate/contracts/events';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pino from 'pino';
import type { Bus } from '../src/bus';
import { NatsBus } from '../src/nats.bus';
import { busContract } from './bus.contract';

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
        const nc = await connect({ servers: urls.NATS_URL, name: 'bus-contract-cleanup' });
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
