import pino from 'pino';
import type { Bus } from '../src/bus';
import { MemoryBus } from '../src/memory.bus';
import { busContract } from './bus.contract';

busContract('memory (in-process)', () => {
  let shared: MemoryBus | undefined;
  return {
    // Replicas in one process share one bus instance; each "client" is a thin handle over it.
    async open(): Promise<Bus> {
      shared ??= new MemoryBus(pino({ level: 'silent' }), 10);
      const bus = shared;
      let closed = false;
      return {
        kind: 'memory',
        publish: (s, p, o) => bus.publish(s, p, o),
        subscribe: async (s, o, hnd) => {
          const sub = await bus.subscribe(s, o, hnd);
          subs.push(sub);
          return sub;
        },
        notify: (s, d) => bus.notify(s, d),
        listen: (s, hnd) => bus.listen(s, hnd),
        ping: () => bus.ping(),
        close: async () => {
          if (closed) return;
          closed = true;
          await Promise.all(subs.splice(0).map((x) => x.stop()));
        },
      };
    },
    async cleanup() {
      await shared?.close();
    },
  };
});
const subs: { stop(): Promise<void> }[] = [];
