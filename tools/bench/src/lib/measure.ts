import { runLoad, type LoadOptions } from './load';
import type { ServerSample } from './protocol';
import type { ScenarioContext, TargetResult } from './scenario';
import type { ServerHandle } from './servers';

const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
const round1 = (n: number): number => Math.round(n * 10) / 10;

function cpuPct(before: ServerSample, after: ServerSample, wallMs: number): number {
  const micros = after.cpuUserMicros + after.cpuSystemMicros - before.cpuUserMicros - before.cpuSystemMicros;
  return round1((micros / 1000 / wallMs) * 100);
}

/** Warm-up (discarded), then the measured run, with the server's own CPU/memory/event-loop readings around it. */
export async function measureTarget(
  ctx: ScenarioContext,
  server: ServerHandle,
  request: {
    path: string;
    headers?: Record<string, string>;
    description: string;
    method?: 'GET' | 'POST';
    vary?: LoadOptions['vary'];
  },
): Promise<TargetResult> {
  const { warmupSec, durationSec, connections } = ctx.settings;
  const url = `${server.origin}${request.path}`;
  const logLinesBefore = server.logLines();

  ctx.log(`${server.name}: warm-up ${warmupSec}s, ${connections} connections`);
  const warm =
    warmupSec > 0
      ? await runLoad({
          url,
          method: request.method,
          headers: request.headers,
          vary: request.vary,
          connections,
          durationSec: warmupSec,
        })
      : undefined;

  const before = await server.sample({ resetEventLoopDelay: true });
  const started = Date.now();
  ctx.log(`${server.name}: measuring ${durationSec}s`);
  const measured = await runLoad({
    url,
    method: request.method,
    headers: request.headers,
    vary: request.vary,
    connections,
    durationSec,
  });
  const wallMs = Date.now() - started;
  const after = await server.sample();
  ctx.log(`${server.name}: ${measured.rps.mean} req/s, p99 ${measured.latencyMs.p99} ms`);
  const usage = serverUsage(server, before, after, wallMs, logLinesBefore);

  return {
    name: server.name,
    description: request.description,
    request: `${request.method ?? 'GET'} ${request.path}`,
    warmup: {
      durationSec: warm?.durationSec ?? 0,
      requests: warm?.requests ?? 0,
      rpsMean: warm?.rps.mean ?? 0,
      errors: warm?.errors ?? 0,
      timeouts: warm?.timeouts ?? 0,
      non2xx: warm?.non2xx ?? 0,
    },
    measured,
    server: usage,
  };
}

/** The server's CPU, memory, event-loop delay and log lines between two samples. */
export function serverUsage(
  server: ServerHandle,
  before: ServerSample,
  after: ServerSample,
  wallMs: number,
  logLinesBefore: number,
): TargetResult['server'] {
  return {
    cpuPct: cpuPct(before, after, wallMs),
    rssMbBefore: mb(before.rssBytes),
    rssMbAfter: mb(after.rssBytes),
    heapUsedMbBefore: mb(before.heapUsedBytes),
    heapUsedMbAfter: mb(after.heapUsedBytes),
    eventLoopDelayMs: {
      mean: round1(after.eventLoopDelay.meanMs),
      p99: round1(after.eventLoopDelay.p99Ms),
      max: round1(after.eventLoopDelay.maxMs),
    },
    logLines: server.logLines() - logLinesBefore,
  };
}

/** Human-readable reasons a target's figures are suspect; empty when clean. */
export function problemsOf(scenario: string, target: TargetResult): string[] {
  const problems: string[] = [];
  const where = `${scenario}/${target.name}`;
  for (const [phase, r] of [
    ['warm-up', target.warmup],
    ['measured run', target.measured],
  ] as const) {
    if (r.errors > 0) problems.push(`${where}: ${r.errors} connection errors in the ${phase}`);
    if (r.timeouts > 0) problems.push(`${where}: ${r.timeouts} timeouts in the ${phase}`);
    if (r.non2xx > 0) problems.push(`${where}: ${r.non2xx} non-2xx answers in the ${phase}`);
  }
  const codes = Object.entries(target.measured.statusCodes).filter(([code]) => !code.startsWith('2'));
  if (codes.length > 0) problems.push(`${where}: status codes ${codes.map(([c, n]) => `${c}×${n}`).join(', ')}`);
  if (target.server.logLines > 0)
    problems.push(`${where}: the server printed ${target.server.logLines} log lines under load (see stderr)`);
  return problems;
}

/** The nearest-rank percentile `p` (0-100) of unsorted samples; NaN when there are none. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
