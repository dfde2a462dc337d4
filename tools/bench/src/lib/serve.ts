import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ChildMessage, ParentMessage, ServerSample, TargetKind } from './protocol';
import { startTarget, type RunningTarget } from './targets';

const RESOLUTION_MS = 10;
// The histogram records whole timer intervals (≥ the resolution); keep only the lateness.
const delayMs = (ns: number): number => (Number.isFinite(ns) && ns > 0 ? Math.max(0, ns / 1e6 - RESOLUTION_MS) : 0);

function send(message: ChildMessage): void {
  process.send?.(message);
}

function sample(delay: ReturnType<typeof monitorEventLoopDelay>): ServerSample {
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  return {
    rssBytes: mem.rss,
    heapUsedBytes: mem.heapUsed,
    cpuUserMicros: cpu.user,
    cpuSystemMicros: cpu.system,
    eventLoopDelay: { meanMs: delayMs(delay.mean), p99Ms: delayMs(delay.percentile(99)), maxMs: delayMs(delay.max) },
  };
}

/**
 * Child mode (`--serve <kind>`): wait for the parent's spec, start the server, report its port,
 * answer samples, and exit on `stop`, on a signal, or when the parent goes away.
 */
export function serveChild(kind: TargetKind): void {
  if (!process.send) {
    process.stderr.write('--serve is an internal mode: the bench forks it with an IPC channel\n');
    process.exit(2);
  }
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  let target: RunningTarget | undefined;
  let stopping = false;

  const stop = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    delay.disable();
    try {
      await target?.close();
    } catch (err) {
      process.stderr.write(`close failed: ${err instanceof Error ? err.message : String(err)}\n`);
      code = code || 1;
    }
    process.exit(code);
  };

  process.on('message', (raw: unknown) => {
    const message = raw as ParentMessage;
    switch (message.type) {
      case 'start':
        if (message.spec.kind !== kind) {
          send({ type: 'failed', message: `asked to start ${message.spec.kind} in a --serve ${kind} process` });
          return;
        }
        startTarget(message.spec).then(
          (running) => {
            target = running;
            send({ type: 'ready', port: running.port });
          },
          (err: unknown) => {
            send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
            void stop(1);
          },
        );
        return;
      case 'sample':
        send({ type: 'sample', id: message.id, sample: sample(delay) });
        if (message.resetEventLoopDelay) delay.reset();
        return;
      case 'stop':
        void stop(0);
        return;
    }
  });
  // An orphan would keep the port and the data dir lock: leave with the parent.
  process.on('disconnect', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
}
