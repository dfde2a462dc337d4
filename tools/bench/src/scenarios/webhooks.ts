import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { listingBody, WebhookReceiver } from '@estate/testing';
import { enginesFromEnv, startDistributed } from '../lib/cluster';
import { expectStatus } from '../lib/http';
import type { LatencySummary, LoadResult } from '../lib/load';
import { serverUsage } from '../lib/measure';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult, TargetResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';

const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** The load: listing writes per second while latency is measured (`BENCH_WEBHOOKS_RATE=n` sets it). */
const WRITES_PER_SECOND = Number(process.env.BENCH_WEBHOOKS_RATE ?? 200);
/** With 1,000 endpoints each write fans out to 20 deliveries: 10 writes/s is 200 deliveries/s. */
const FANOUT_WRITES_PER_SECOND = 10;
/** Goal: write acknowledged -> webhook received, p99 (embedded). */
const P99_GOAL_MS = 100;
/** Goal in the distributed profile (at 200 writes/s). */
const DISTRIBUTED_P99_GOAL_MS = 250;
/**
 * Writes per second of the distributed target (`BENCH_WEBHOOKS_DISTRIBUTED_RATE`; 0 leaves it out). It
 * runs when the engines are in the environment (MONGODB_URL, NATS_URL, ELASTICSEARCH_URL); its rate is
 * bounded by the engine: the FerretDB test engine takes some 15 writes a second.
 */
const DISTRIBUTED_WRITES_PER_SECOND = Number(process.env.BENCH_WEBHOOKS_DISTRIBUTED_RATE ?? 15);
/** 1,000 endpoints: 50 accounts of 20 (the per-account limit). */
const ACCOUNTS = 50;
const ENDPOINTS_PER_ACCOUNT = 20;
const FAILING_SHARE = 0.1;
/** Goal: healthy receivers' p99 with 10% failing stays within this factor of the all-healthy run. */
const FANOUT_RATIO_GOAL = 2;
/** A delivery that has not arrived this long after the last write is counted lost. */
const DRAIN_MS = 30_000;

const round = (n: number): number => Math.round(n * 1000) / 1000;

function summary(samples: number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0);
  const mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : 0;
  return {
    mean: round(mean),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted[sorted.length - 1] ?? 0),
  };
}

interface Product {
  server: ServerHandle;
  admin: Record<string, string>;
  platform: Record<string, string>;
}

async function startProduct(ctx: ScenarioContext, name: string): Promise<Product> {
  const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
  const platformApiKey = `bench_${randomBytes(24).toString('base64url')}`;
  const server = await ctx.servers.start(name, {
    kind: 'embedded',
    dataDir: await ctx.tempDir(name),
    adminApiKey,
    platformApiKey,
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    logLevel: 'warn',
    // Failing receivers are retried soon, so retries run during the measurement, as they would in production.
    webhooks: { allowPrivateTargets: true, retryScheduleMs: [1000, 2000, 4000] },
  });
  return {
    server,
    admin: { authorization: `Bearer ${adminApiKey}` },
    platform: { authorization: `Bearer ${platformApiKey}` },
  };
}

async function postJson(origin: string, path: string, headers: Record<string, string>, body: unknown, status = 201) {
  const res = await expectStatus(`${origin}${path}`, status, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return JSON.parse(res.text) as Record<string, unknown>;
}

/**
 * Writes listings at a fixed rate (open loop: a slow answer does not slow the schedule) with the
 * given keys in turn, and measures, per delivery to a healthy endpoint, the time from the write's
 * acknowledgement to the receiver getting the webhook.
 */
async function measureDeliveries(
  ctx: ScenarioContext,
  product: Product,
  receiver: WebhookReceiver,
  options: {
    keys: Record<string, string>[];
    healthyEndpointsPerKey: number;
    writesPerSecond: number;
    description: string;
  },
): Promise<TargetResult> {
  const { server } = product;
  const ackedAt = new Map<string, number>();
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  let writes = 0;
  const seenBefore = receiver.deliveries.length;
  const logLinesBefore = server.logLines();
  const before = await server.sample({ resetEventLoopDelay: true });
  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  ctx.log(`${server.name}: ${options.writesPerSecond} writes/s for ${ctx.settings.durationSec}s`);
  for (let i = 0; Date.now() - started < ctx.settings.durationSec * 1000; i++) {
    const due = started + (i * 1000) / options.writesPerSecond;
    if (due > Date.now()) await sleep(due - Date.now());
    const headers = options.keys[i % options.keys.length];
    writes++;
    const write = fetch(`${server.origin}/v1/listings`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(listingBody()),
    })
      .then(async (res) => {
        const at = performance.timeOrigin + performance.now();
        statusCodes[res.status] = (statusCodes[res.status] ?? 0) + 1;
        const body = (await res.json()) as { id?: string };
        if (res.status === 201 && body.id) ackedAt.set(body.id, at);
      })
      .catch(() => {
        errors++;
      })
      .finally(() => inFlight.delete(write));
    inFlight.add(write);
  }
  await Promise.all([...inFlight]);
  const wallMs = Date.now() - started;
  const expected = ackedAt.size * options.healthyEndpointsPerKey;
  const healthy = () =>
    receiver.deliveries
      .slice(seenBefore)
      .filter((d) => d.event?.type === 'listing.created' && !d.endpoint.startsWith('failing'));
  const drainUntil = Date.now() + DRAIN_MS;
  while (new Set(healthy().map((d) => `${d.endpoint} ${d.event!.id}`)).size < expected && Date.now() < drainUntil)
    await sleep(100);
  const after = await server.sample();

  // The first arrival of each event at each healthy endpoint; a write's latency is from its acknowledgement.
  const first = new Map<string, number>();
  for (const d of healthy()) {
    const key = `${d.endpoint} ${d.event!.id}`;
    if (!first.has(key)) first.set(key, d.receivedAt - (ackedAt.get(d.event!.data.id as string) ?? d.receivedAt));
  }
  const latencies = [...first.values()];
  const lost = expected - latencies.length;
  const measured: LoadResult = {
    durationSec: round(wallMs / 1000),
    rps: { mean: round(writes / (wallMs / 1000)), stddev: 0, min: 0, max: 0 },
    requests: writes,
    latencyMs: summary(latencies),
    bytesPerResponse: 0,
    errors,
    timeouts: lost,
    non2xx: Object.entries(statusCodes)
      .filter(([code]) => !code.startsWith('2'))
      .reduce((n, [, c]) => n + c, 0),
    statusCodes,
    loadgenCpuPct: 0,
  };
  ctx.log(
    `${server.name}: ${latencies.length}/${expected} deliveries, p99 ${measured.latencyMs.p99} ms from write to webhook`,
  );
  return {
    name: server.name,
    description: options.description,
    request: `POST /v1/listings at ${options.writesPerSecond}/s -> webhook listing.created (latency: write acknowledged to delivery received)`,
    warmup: { durationSec: 0, requests: 0, rpsMean: 0, errors: 0, timeouts: 0, non2xx: 0 },
    measured,
    server: serverUsage(server, before, after, wallMs, logLinesBefore),
  };
}

/** 50 accounts of 20 endpoints; `failing` of them answer 500. Returns each account's admin key headers. */
async function registerFanout(
  product: Product,
  receiver: WebhookReceiver,
  failing: number,
): Promise<Record<string, string>[]> {
  const keys: Record<string, string>[] = [];
  let n = 0;
  for (let a = 0; a < ACCOUNTS; a++) {
    const account = await postJson(product.server.origin, '/v1/accounts', product.platform, { name: `Bench ${a}` });
    const headers = { authorization: `Bearer ${(account.adminKey as { secret: string }).secret}` };
    keys.push(headers);
    for (let e = 0; e < ENDPOINTS_PER_ACCOUNT; e++, n++) {
      // Failing endpoints are spread over the accounts, every tenth one.
      const name = n % Math.round(1 / FAILING_SHARE) === 0 && failing > 0 ? `failing-${a}-${e}` : `ok-${a}-${e}`;
      const hook = await postJson(product.server.origin, '/v1/webhooks', headers, {
        url: receiver.url(name),
        events: ['listing.created'],
      });
      receiver.secret(name, hook.secret as string);
    }
  }
  return keys;
}

export const webhooks: Scenario = {
  name: 'webhooks',
  description:
    'Listing write acknowledged -> webhook received (embedded, one endpoint, 200 writes/s); 1,000 endpoints with 10% failing vs all healthy (10 writes/s); distributed, one endpoint, at the rate the engines take (when they are configured)',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const receiver = await WebhookReceiver.start();
    receiver.answer((d) => (d.endpoint.startsWith('failing') ? 500 : 200));
    const targets: TargetResult[] = [];
    const problems: string[] = [];
    try {
      ctx.log('starting the embedded product (one endpoint)');
      const single = await startProduct(ctx, 'embedded-one-endpoint');
      const hook = await postJson(single.server.origin, '/v1/webhooks', single.admin, {
        url: receiver.url('single'),
        events: ['listing.created'],
      });
      receiver.secret('single', hook.secret as string);
      targets.push(
        await measureDeliveries(ctx, single, receiver, {
          keys: [single.admin],
          healthyEndpointsPerKey: 1,
          writesPerSecond: WRITES_PER_SECOND,
          description: 'embedded profile, one healthy endpoint',
        }),
      );
      await single.server.stop();

      for (const failing of [0, ACCOUNTS * ENDPOINTS_PER_ACCOUNT * FAILING_SHARE]) {
        const label = failing === 0 ? 'embedded-1000-endpoints-healthy' : 'embedded-1000-endpoints-10pct-failing';
        ctx.log(`starting the embedded product (${label})`);
        const product = await startProduct(ctx, label);
        const keys = await registerFanout(product, receiver, failing);
        const healthyPerKey = ENDPOINTS_PER_ACCOUNT - (failing > 0 ? ENDPOINTS_PER_ACCOUNT * FAILING_SHARE : 0);
        targets.push(
          await measureDeliveries(ctx, product, receiver, {
            keys,
            healthyEndpointsPerKey: healthyPerKey,
            writesPerSecond: FANOUT_WRITES_PER_SECOND,
            description:
              failing === 0
                ? '1,000 endpoints (50 accounts x 20), all healthy; latency of every delivery'
                : '1,000 endpoints, 100 answering 500 (retried during the run); latency of the healthy deliveries',
          }),
        );
        await product.server.stop();
      }

      const engines = enginesFromEnv();
      if (engines && DISTRIBUTED_WRITES_PER_SECOND > 0) {
        ctx.log('starting the distributed profile (gateway, listings, media, leads, webhooks on the engines)');
        const cluster = await startDistributed(ctx, engines, {
          rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
          env: { webhooks: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1', WEBHOOKS_RETRY_SCHEDULE: '1000,2000,4000' } },
        });
        try {
          const server = { ...cluster.gateway, name: 'distributed-one-endpoint' };
          const product: Product = { server, admin: cluster.auth, platform: cluster.auth };
          const hook = await postJson(cluster.origin, '/v1/webhooks', cluster.auth, {
            url: receiver.url('distributed'),
            events: ['listing.created'],
          });
          receiver.secret('distributed', hook.secret as string);
          targets.push(
            await measureDeliveries(ctx, product, receiver, {
              keys: [cluster.auth],
              healthyEndpointsPerKey: 1,
              writesPerSecond: DISTRIBUTED_WRITES_PER_SECOND,
              description: `distributed profile (separate processes on MongoDB and NATS), one healthy endpoint, ${DISTRIBUTED_WRITES_PER_SECOND} writes/s`,
            }),
          );
        } finally {
          await cluster.stop();
        }
      }
    } finally {
      await receiver.stop();
    }

    if (receiver.unverified().length > 0)
      problems.push(`webhooks: ${receiver.unverified().length} deliveries failed signature verification`);
    for (const t of targets) {
      if (t.measured.errors > 0) problems.push(`webhooks/${t.name}: ${t.measured.errors} write errors`);
      if (t.measured.non2xx > 0) problems.push(`webhooks/${t.name}: ${t.measured.non2xx} non-2xx writes`);
      if (t.measured.timeouts > 0)
        problems.push(`webhooks/${t.name}: ${t.measured.timeouts} deliveries not received within ${DRAIN_MS / 1000}s`);
      if (t.server.logLines > 0) problems.push(`webhooks/${t.name}: the server printed ${t.server.logLines} log lines`);
    }

    const [one, healthy, failing, distributed] = targets;
    const fanout = failing.measured.latencyMs.p99 / Math.max(healthy.measured.latencyMs.p99, 1);
    const ratios: Ratio[] = [
      {
        name: 'write -> webhook p99 (ms), embedded',
        value: one.measured.latencyMs.p99,
        goal: { max: P99_GOAL_MS },
        verdict: one.measured.latencyMs.p99 <= P99_GOAL_MS ? 'PASS' : 'BELOW TARGET',
        note: `p99 of acknowledgement-to-delivery at ${WRITES_PER_SECOND} writes/s; goal ≤ ${P99_GOAL_MS} ms`,
      },
      {
        name: 'healthy p99 with 10% failing / all healthy',
        value: round(fanout),
        goal: { max: FANOUT_RATIO_GOAL },
        verdict: fanout <= FANOUT_RATIO_GOAL ? 'PASS' : 'BELOW TARGET',
        note: `1,000 endpoints, ${FANOUT_WRITES_PER_SECOND} writes/s (${FANOUT_WRITES_PER_SECOND * ENDPOINTS_PER_ACCOUNT} deliveries/s); goal ≤ ${FANOUT_RATIO_GOAL}`,
      },
    ];
    if (distributed)
      ratios.push({
        name: 'write -> webhook p99 (ms), distributed',
        value: distributed.measured.latencyMs.p99,
        goal: { max: DISTRIBUTED_P99_GOAL_MS },
        verdict:
          DISTRIBUTED_WRITES_PER_SECOND >= 200 && distributed.measured.latencyMs.p99 <= DISTRIBUTED_P99_GOAL_MS
            ? 'PASS'
            : 'BELOW TARGET',
        note: `p99 at ${DISTRIBUTED_WRITES_PER_SECOND} writes/s (the goal is ≤ ${DISTRIBUTED_P99_GOAL_MS} ms at 200 writes/s; the engine bounds the rate)`,
      });
    return { name: this.name, description: this.description, targets, ratios, problems };
  },
};
