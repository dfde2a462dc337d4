import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { listingBody } from '@estate/testing';
import { expectStatus } from '../lib/http';
import type { LatencySummary } from '../lib/load';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult, TargetResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';
import { person } from './leads';

const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** Requests per second, sent on a fixed schedule whatever the answers take (open loop). */
const RATE = Number(process.env.BENCH_SOAK_RATE ?? 200);
/** How long the soak lasts: 10 minutes in a full run, `BENCH_SOAK_SECONDS` to change it, 30 s with `--quick`. */
const FULL_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
/** The first minute (or tenth of a short run) warms caches and the JIT: memory growth is counted from its end. */
const WARM_SHARE = 0.1;
const MAX_WARM_SECONDS = 60;
const P99_GOAL_MS = 20;
const RSS_GROWTH_GOAL_PCT = 10;
/** Listings created before the soak, read and searched during it. */
const SEED_LISTINGS = 500;
const SAMPLE_EVERY_MS = 5_000;
/** A request still unanswered this long after it was due counts as a timeout. */
const REQUEST_TIMEOUT_MS = 10_000;

const round = (n: number): number => Math.round(n * 1000) / 1000;

type Kind = 'get' | 'search' | 'create' | 'patch' | 'capture';
/** The mix, out of 20 requests: reads dominate, as on a portal. */
const MIX: readonly Kind[] = [
  ...Array<Kind>(11).fill('get'),
  ...Array<Kind>(3).fill('search'),
  ...Array<Kind>(2).fill('create'),
  ...Array<Kind>(2).fill('patch'),
  ...Array<Kind>(2).fill('capture'),
];
const SEARCHES = [
  '/v1/listings?status=active&limit=20',
  '/v1/listings?minPrice=200000&maxPrice=600000&sort=-listPrice&limit=20',
  '/v1/listings?propertyType=residential&sort=-updatedAt&limit=20',
  '/v1/listings?near=30.27,-97.74&radiusKm=10&limit=20',
];

function summary(samples: Float64Array, size: number): LatencySummary {
  if (size === 0) return { mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = samples.slice(0, size).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  const at = (p: number): number => sorted[Math.min(size - 1, Math.ceil(p * size) - 1)];
  return {
    mean: round(sum / size),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted[size - 1]),
  };
}

export const soak: Scenario = {
  name: 'soak',
  description: `A mixed load at ${RATE} req/s on a fixed schedule for ${FULL_SECONDS / 60} minutes against the embedded product (55% GET by id, 15% search, 10% create, 10% PATCH, 10% lead capture): errors, latency from each request's due time, and the server's RSS after warm-up against its peak later`,

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const seconds = ctx.settings.mode === 'quick' ? 30 : FULL_SECONDS;
    const warmSeconds = Math.min(MAX_WARM_SECONDS, Math.round(seconds * WARM_SHARE));
    const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
    const auth = { authorization: `Bearer ${adminApiKey}` };
    const json = { ...auth, 'content-type': 'application/json' };

    ctx.log('starting the embedded product');
    const server: ServerHandle = await ctx.servers.start('soak', {
      kind: 'embedded',
      dataDir: await ctx.tempDir('soak'),
      adminApiKey,
      rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      logLevel: 'warn',
    });
    const origin = server.origin;

    ctx.log(`seeding ${SEED_LISTINGS} listings`);
    const ids: string[] = [];
    for (let i = 0; i < SEED_LISTINGS; i++) {
      const res = await expectStatus(`${origin}/v1/listings`, 201, {
        method: 'POST',
        headers: json,
        body: JSON.stringify(listingBody()),
      });
      ids.push((JSON.parse(res.text) as { id: string }).id);
    }

    const total = Math.round(seconds * RATE);
    const latencies = new Float64Array(total);
    let answered = 0;
    /** Each kind's latencies too: which kind makes the tail. */
    const byKind = new Map<Kind, { latencies: Float64Array; answered: number }>(
      [...new Set(MIX)].map((kind) => [kind, { latencies: new Float64Array(total), answered: 0 }]),
    );
    let errors = 0;
    let timeouts = 0;
    const statusCodes: Record<string, number> = {};
    let nextPerson = 0;

    /** The first refusal of each kind of request, for the problems list. */
    const firstRefusals = new Map<Kind, string>();
    const send = async (n: number): Promise<number> => {
      const kind = MIX[n % MIX.length];
      const res = await request(kind, n);
      if (res.status >= 300 && !firstRefusals.has(kind)) {
        firstRefusals.set(kind, `${kind} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      } else {
        await res.arrayBuffer();
      }
      return res.status;
    };
    const request = async (kind: Kind, n: number): Promise<Response> => {
      const id = ids[(n * 7919) % ids.length];
      switch (kind) {
        case 'get':
          return fetch(`${origin}/v1/listings/${id}`, { headers: auth, signal: timeout() });
        case 'search':
          return fetch(`${origin}${SEARCHES[n % SEARCHES.length]}`, { headers: auth, signal: timeout() });
        case 'create':
          return fetch(`${origin}/v1/listings`, {
            method: 'POST',
            headers: json,
            body: JSON.stringify(listingBody()),
            signal: timeout(),
          });
        case 'patch':
          return fetch(`${origin}/v1/listings/${id}`, {
            method: 'PATCH',
            headers: { ...auth, 'content-type': 'application/merge-patch+json' },
            body: JSON.stringify({ pricing: { listPrice: 300_000 + (n % 1000) * 100 } }),
            signal: timeout(),
          });
        case 'capture':
          return fetch(`${origin}/v1/leads`, {
            method: 'POST',
            headers: json,
            body: JSON.stringify(person(nextPerson++, id)),
            signal: timeout(),
          });
      }
    };
    const timeout = (): AbortSignal => AbortSignal.timeout(REQUEST_TIMEOUT_MS);

    const rss: { atSec: number; mb: number }[] = [];
    const sampleRss = async (startedAt: number): Promise<void> => {
      const s = await server.sample();
      const sample = { atSec: Math.round((Date.now() - startedAt) / 1000), mb: Math.round(s.rssBytes / 1024 / 1024) };
      // A line a minute: the shape of the curve (a plateau or a steady climb) says more than its two ends.
      if (rss.length % Math.round(60_000 / SAMPLE_EVERY_MS) === 0)
        ctx.log(
          `soak: ${sample.atSec} s, RSS ${sample.mb} MB, JS heap used ${Math.round(s.heapUsedBytes / 1024 / 1024)} MB`,
        );
      rss.push(sample);
    };

    ctx.log(`soak: ${RATE} req/s for ${seconds} s (${total} requests)`);
    const before = await server.sample({ resetEventLoopDelay: true });
    const startedAt = Date.now();
    const cpuBefore = process.cpuUsage();
    const inFlight = new Set<Promise<void>>();
    let sampling = Promise.resolve();
    let nextSample = startedAt;
    for (let n = 0; n < total; n++) {
      const due = startedAt + (n * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      if (Date.now() >= nextSample) {
        nextSample += SAMPLE_EVERY_MS;
        sampling = sampling.then(() => sampleRss(startedAt));
      }
      const p = send(n).then(
        (status) => {
          // Latency from when the request was due, so a stalled server is not hidden by a stalled sender.
          const latency = performance.timeOrigin + performance.now() - due;
          latencies[answered++] = latency;
          const ofKind = byKind.get(MIX[n % MIX.length])!;
          ofKind.latencies[ofKind.answered++] = latency;
          statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        },
        (err: unknown) => {
          if ((err as Error).name === 'TimeoutError') timeouts++;
          else errors++;
        },
      );
      const tracked = p.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    }
    await Promise.all(inFlight);
    await sampling;
    await sampleRss(startedAt);
    const wallMs = Date.now() - startedAt;
    const after = await server.sample();
    const cpu = process.cpuUsage(cpuBefore);

    const afterWarm = rss.find((r) => r.atSec >= warmSeconds) ?? rss[0];
    const peakLater = Math.max(...rss.filter((r) => r.atSec >= warmSeconds).map((r) => r.mb));
    const growthPct = round(((peakLater - afterWarm.mb) / afterWarm.mb) * 100);
    const latency = summary(latencies, answered);
    const non2xx = Object.entries(statusCodes)
      .filter(([code]) => !code.startsWith('2'))
      .reduce((n, [, count]) => n + count, 0);

    const target: TargetResult = {
      name: 'soak',
      description: `embedded product, ${RATE} req/s open loop, ${seconds} s`,
      request:
        'mixed: GET /v1/listings/:id, GET /v1/listings?…, POST /v1/listings, PATCH /v1/listings/:id, POST /v1/leads',
      warmup: { durationSec: 0, requests: 0, rpsMean: 0, errors: 0, timeouts: 0, non2xx: 0 },
      measured: {
        durationSec: round(wallMs / 1000),
        rps: { mean: round(answered / (wallMs / 1000)), stddev: 0, min: 0, max: 0 },
        requests: answered,
        latencyMs: latency,
        bytesPerResponse: 0,
        errors,
        timeouts,
        non2xx,
        statusCodes,
        loadgenCpuPct: round(((cpu.user + cpu.system) / 1000 / wallMs) * 100),
      },
      server: {
        cpuPct: round(
          ((after.cpuUserMicros + after.cpuSystemMicros - before.cpuUserMicros - before.cpuSystemMicros) /
            1000 /
            wallMs) *
            100,
        ),
        rssMbBefore: afterWarm.mb,
        rssMbAfter: peakLater,
        heapUsedMbBefore: Math.round(before.heapUsedBytes / 1024 / 1024),
        heapUsedMbAfter: Math.round(after.heapUsedBytes / 1024 / 1024),
        eventLoopDelayMs: {
          mean: after.eventLoopDelay.meanMs,
          p99: after.eventLoopDelay.p99Ms,
          max: after.eventLoopDelay.maxMs,
        },
        logLines: 0,
      },
    };

    const held = errors === 0 && timeouts === 0 && non2xx === 0;
    const ratios: Ratio[] = [
      {
        name: 'soak: p99 ms from due time',
        value: latency.p99,
        goal: { max: P99_GOAL_MS },
        verdict: latency.p99 <= P99_GOAL_MS ? 'PASS' : 'BELOW TARGET',
        note: `every answer, ${answered} of ${total}; goal ≤ ${P99_GOAL_MS} ms`,
      },
      ...[...byKind].map(([kind, k]): Ratio => {
        const of = summary(k.latencies, k.answered);
        return {
          name: `soak: ${kind} p99 ms from due time`,
          value: of.p99,
          note: `${k.answered} answers; p50 ${of.p50} ms, max ${of.max} ms`,
        };
      }),
      {
        name: 'soak: RSS growth % after warm-up',
        value: growthPct,
        goal: { max: RSS_GROWTH_GOAL_PCT },
        verdict: growthPct <= RSS_GROWTH_GOAL_PCT ? 'PASS' : 'BELOW TARGET',
        note: `${afterWarm.mb} MB at ${afterWarm.atSec} s → peak ${peakLater} MB later (sampled every ${SAMPLE_EVERY_MS / 1000} s); goal ≤ ${RSS_GROWTH_GOAL_PCT}%`,
      },
      {
        name: 'soak: requests that failed',
        value: errors + timeouts + non2xx,
        goal: { max: 0 },
        verdict: held ? 'PASS' : 'BELOW TARGET',
        note: `errors ${errors}, timeouts ${timeouts}, non-2xx ${non2xx}`,
      },
    ];
    return {
      name: this.name,
      description: this.description,
      targets: [target],
      ratios,
      problems: held
        ? []
        : [
            `soak: ${errors} errors, ${timeouts} timeouts, ${non2xx} non-2xx answers`,
            ...[...firstRefusals.values()].map((r) => `soak: ${r}`),
          ],
    };
  },
};
