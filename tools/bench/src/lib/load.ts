import { readFileSync } from 'node:fs';
import type autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Called for every request: its own path and body (a new person per capture, the next lead of a pool). */
  vary?: () => { path?: string; body?: string };
  connections: number;
  durationSec: number;
  /** Per-request timeout, seconds. */
  timeoutSec?: number;
}

export interface LatencySummary {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  durationSec: number;
  /** Requests per second, from autocannon's 1 s samples. */
  rps: { mean: number; stddev: number; min: number; max: number };
  requests: number;
  /** Milliseconds; exact percentiles over every response (autocannon's own histogram rounds to whole ms). */
  latencyMs: LatencySummary;
  /** Status line, headers and body. */
  bytesPerResponse: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** CPU the load generator itself used, as % of one core: near 100 means it may be the bottleneck. */
  loadgenCpuPct: number;
}

/** A growable float buffer: one sample per response, no per-sample allocation. */
class Samples {
  private data = new Float64Array(1 << 16);
  private size = 0;

  push(value: number): void {
    if (this.size === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.size++] = value;
  }

  summary(): LatencySummary {
    if (this.size === 0) return { mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
    const sorted = this.data.slice(0, this.size).sort();
    let sum = 0;
    for (const v of sorted) sum += v;
    // Nearest-rank percentile.
    const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
    return { mean: sum / sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1] };
  }
}

const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** One closed-loop autocannon run in this process (the server under test lives in another one). */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  // Lazy: forked servers share this bundle and should not load the load generator.
  const { default: cannon } = await import('autocannon');
  const latencies = new Samples();
  const cpuBefore = process.cpuUsage();
  const wallBefore = process.hrtime.bigint();

  const instance = cannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    connections: options.connections,
    pipelining: 1,
    duration: options.durationSec,
    timeout: options.timeoutSec ?? 10,
    ...(options.vary ? { requests: [{ setupRequest: (request) => ({ ...request, ...options.vary!() }) }] } : {}),
  });
  instance.on('response', (_client, _status, _bytes, responseTimeMs) => latencies.push(responseTimeMs));
  const result: autocannon.Result = await instance;

  const cpu = process.cpuUsage(cpuBefore);
  const wallMicros = Number(process.hrtime.bigint() - wallBefore) / 1000;
  const responses = Object.values(result.statusCodeStats).reduce((n, s) => n + s.count, 0);
  return {
    durationSec: result.duration,
    rps: {
      mean: round(result.requests.mean, 1),
      stddev: round(result.requests.stddev, 1),
      min: result.requests.min,
      max: result.requests.max,
    },
    requests: responses,
    latencyMs: roundLatency(latencies.summary()),
    bytesPerResponse: responses > 0 ? Math.round((result.throughput.total ?? 0) / responses) : 0,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
    loadgenCpuPct: round(((cpu.user + cpu.system) / wallMicros) * 100, 1),
  };
}

function roundLatency(l: LatencySummary): LatencySummary {
  return {
    mean: round(l.mean, 3),
    p50: round(l.p50, 3),
    p90: round(l.p90, 3),
    p99: round(l.p99, 3),
    max: round(l.max, 3),
  };
}

/** The autocannon version in use, for the record. */
export function loadGeneratorVersion(): string {
  try {
    return `autocannon ${(JSON.parse(readFileSync(require.resolve('autocannon/package.json'), 'utf8')) as { version: string }).version}`;
  } catch {
    return 'autocannon (version unknown)';
  }
}
