import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CITIES, WORDS, random } from '../lib/generated-listings';
import { expectStatus } from '../lib/http';
import type { LatencySummary, LoadResult } from '../lib/load';
import type { EmbeddedSpec } from '../lib/protocol';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult, TargetResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';

const LISTINGS = 100_000;
/** Concurrent clients per query kind: enough to keep the server busy without queueing behind 2 CPUs. */
const CLIENTS = 4;
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
const IN_PROCESS_P95_GOAL_MS = 20;
const LAYERS_RATIO_GOAL = 1.25;

type Kind = 'filtered' | 'geo' | 'full-text' | 'faceted';
const KINDS: Kind[] = ['filtered', 'geo', 'full-text', 'faceted'];

/** A varied stream of queries per kind (fixed seed), so no engine answers one query from a cache. */
function queries(kind: Kind, count: number): string[] {
  const rnd = random(7);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)];
  return Array.from({ length: count }, () => {
    const min = 100_000 + Math.floor(rnd() * 20) * 50_000;
    const place = pick(CITIES);
    switch (kind) {
      case 'filtered':
        return `status=active,pending&propertyType=residential&minPrice=${min}&maxPrice=${min + 400_000}&minBedrooms=${1 + Math.floor(rnd() * 3)}&sort=-listPrice`;
      case 'geo':
        return rnd() < 0.5
          ? `near=${(place.lat + (rnd() - 0.5) * 0.2).toFixed(4)},${(place.lng + (rnd() - 0.5) * 0.2).toFixed(4)}&radiusKm=${2 + Math.floor(rnd() * 8)}&sort=listPrice`
          : `bbox=${(place.lng - 0.1).toFixed(3)},${(place.lat - 0.1).toFixed(3)},${(place.lng + 0.1).toFixed(3)},${(place.lat + 0.1).toFixed(3)}&sort=-updatedAt`;
      case 'full-text':
        return `q=${encodeURIComponent(`${pick(WORDS)} ${pick(WORDS)}`)}`;
      case 'faceted':
        return `city=${encodeURIComponent(place.city)}&minPrice=${min}&facets=status,propertyType,city`;
    }
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const round = (n: number): number => Math.round(n * 100) / 100;

interface KindRun {
  latency: number[];
  engine: number[];
  requests: number;
  failures: Record<string, number>;
  seconds: number;
}

/** Closed loop: each client sends its next query when the last answer is in; records client and engine (Server-Timing) time. */
async function drive(
  origin: string,
  auth: Record<string, string>,
  list: string[],
  seconds: number,
  record: boolean,
): Promise<KindRun> {
  const run: KindRun = { latency: [], engine: [], requests: 0, failures: {}, seconds };
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        const query = list[next++ % list.length];
        const started = performance.now();
        const res = await fetch(`${origin}/v1/listings?${query}`, { headers: auth });
        await res.arrayBuffer();
        const took = performance.now() - started;
        run.requests += 1;
        if (res.status !== 200) run.failures[res.status] = (run.failures[res.status] ?? 0) + 1;
        if (!record) continue;
        run.latency.push(took);
        const engine = /index;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
        if (engine) run.engine.push(Number(engine[1]));
      }
    }),
  );
  run.latency.sort((a, b) => a - b);
  run.engine.sort((a, b) => a - b);
  return run;
}

function summary(sorted: number[]): LatencySummary & { p95: number } {
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    mean: round(mean),
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1] ?? 0),
  };
}

export const search: Scenario = {
  name: 'search',
  description: `GET /v1/listings over ${LISTINGS.toLocaleString('en-US')} generated listings through the gateway edge: filtered, geo, full-text and faceted queries, on the in-process index and on Elasticsearch (ELASTICSEARCH_URL); p50/p95 per index and kind, and the gateway's p95 against the engine's own query time (Server-Timing) in the same run`,

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const indexes: Array<{ label: string; search: NonNullable<EmbeddedSpec['search']> }> = [
      { label: 'in-process', search: { index: 'memory' } },
    ];
    const esUrl = process.env.ELASTICSEARCH_URL;
    if (esUrl)
      indexes.push({
        label: 'elasticsearch',
        search: { index: 'elasticsearch', url: esUrl, alias: `bench-${randomBytes(4).toString('hex')}` },
      });
    else ctx.log('ELASTICSEARCH_URL is not set: Elasticsearch is left out of this run');

    const targets: TargetResult[] = [];
    const ratios: Ratio[] = [];
    const problems: string[] = [];
    const warmupSec = Math.min(ctx.settings.warmupSec, 3);
    const durationSec = Math.max(2, Math.round(ctx.settings.durationSec / 3));

    for (const { label, search: searchSpec } of indexes) {
      const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
      const auth = { authorization: `Bearer ${adminApiKey}` };
      ctx.log(`${label}: starting the embedded product and seeding ${LISTINGS} listings into the index`);
      const seedStarted = performance.now();
      const server: ServerHandle = await ctx.servers.start(label, {
        kind: 'embedded',
        dataDir: await ctx.tempDir(`search-${label}`),
        adminApiKey,
        rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
        logLevel: 'warn',
        search: searchSpec,
        seedListings: LISTINGS,
      });
      ctx.log(`${label}: ready in ${Math.round((performance.now() - seedStarted) / 1000)} s`);
      const check = JSON.parse(
        (await expectStatus(`${server.origin}/v1/listings?limit=1`, 200, { headers: auth })).text,
      ) as { total: number };
      if (check.total !== LISTINGS)
        problems.push(`search/${label}: the index holds ${check.total} listings, not ${LISTINGS}`);

      const engineP95: number[] = [];
      const gatewayP95: number[] = [];
      for (const kind of KINDS) {
        const list = queries(kind, 500);
        await drive(server.origin, auth, list, warmupSec, false);
        const before = await server.sample({ resetEventLoopDelay: true });
        const run = await drive(server.origin, auth, list, durationSec, true);
        const after = await server.sample();
        const client = summary(run.latency);
        const engine = summary(run.engine);
        const failures = Object.values(run.failures).reduce((a, b) => a + b, 0);
        if (failures > 0) problems.push(`search/${label}/${kind}: non-200 answers ${JSON.stringify(run.failures)}`);
        ctx.log(
          `${label}/${kind}: ${run.requests} requests, p50 ${client.p50} ms, p95 ${client.p95} ms; engine p50 ${engine.p50} ms, p95 ${engine.p95} ms`,
        );
        const measured: LoadResult = {
          durationSec,
          rps: { mean: round(run.requests / durationSec), stddev: 0, min: 0, max: 0 },
          requests: run.requests,
          latencyMs: client,
          bytesPerResponse: 0,
          errors: 0,
          timeouts: 0,
          non2xx: failures,
          statusCodes: { 200: run.requests - failures, ...run.failures },
          loadgenCpuPct: 0,
        };
        targets.push({
          name: `${label} ${kind}`,
          description: `${CLIENTS} clients, closed loop; engine p50 ${engine.p50} ms / p95 ${engine.p95} ms`,
          request: `GET /v1/listings?${list[0]}`,
          warmup: { durationSec: warmupSec, requests: 0, rpsMean: 0, errors: 0, timeouts: 0, non2xx: 0 },
          measured,
          server: {
            cpuPct: round(
              ((after.cpuUserMicros + after.cpuSystemMicros - before.cpuUserMicros - before.cpuSystemMicros) /
                1000 /
                (durationSec * 1000)) *
                100,
            ),
            rssMbBefore: Math.round(before.rssBytes / 1048576),
            rssMbAfter: Math.round(after.rssBytes / 1048576),
            heapUsedMbBefore: Math.round(before.heapUsedBytes / 1048576),
            heapUsedMbAfter: Math.round(after.heapUsedBytes / 1048576),
            eventLoopDelayMs: {
              mean: round(after.eventLoopDelay.meanMs),
              p99: round(after.eventLoopDelay.p99Ms),
              max: round(after.eventLoopDelay.maxMs),
            },
            logLines: 0,
          },
        });
        ratios.push({
          name: `${label} ${kind}: gateway p95 ms`,
          value: client.p95,
          ...(label === 'in-process'
            ? {
                goal: { max: IN_PROCESS_P95_GOAL_MS },
                verdict: client.p95 <= IN_PROCESS_P95_GOAL_MS ? ('PASS' as const) : ('BELOW TARGET' as const),
              }
            : {}),
          note: `p50 ${client.p50} ms; engine p95 ${engine.p95} ms`,
        });
        engineP95.push(engine.p95);
        gatewayP95.push(client.p95);
      }
      if (label === 'elasticsearch') {
        const ratio = round(
          gatewayP95.reduce((a, b) => a + b, 0) /
            Math.max(
              0.01,
              engineP95.reduce((a, b) => a + b, 0),
            ),
        );
        ratios.push({
          name: 'elasticsearch: gateway p95 / engine (took) p95, all kinds',
          value: ratio,
          goal: { max: LAYERS_RATIO_GOAL },
          verdict: ratio <= LAYERS_RATIO_GOAL ? 'PASS' : 'BELOW TARGET',
          note: "what our layers (edge, validation, translation, serialisation, HTTP) add to Elasticsearch's own time",
        });
      }
      await server.stop();
      if (searchSpec.index === 'elasticsearch') await dropBenchIndex(searchSpec.url, searchSpec.alias);
    }
    return { name: this.name, description: this.description, targets, ratios, problems };
  },
};

async function dropBenchIndex(url: string, alias: string): Promise<void> {
  const res = await fetch(`${url}/${alias}-*`);
  if (!res.ok) return;
  for (const index of Object.keys((await res.json()) as Record<string, unknown>))
    await fetch(`${url}/${index}`, { method: 'DELETE' });
}
