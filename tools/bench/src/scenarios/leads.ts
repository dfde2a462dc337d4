import { randomBytes } from 'node:crypto';
import { listingBody } from '@estate/testing';
import { expectStatus } from '../lib/http';
import { measureTarget, problemsOf } from '../lib/measure';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult, TargetResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';

/** As in listings-get: the limiter runs on every request but never trips. */
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** Every 4th capture is someone captured three requests earlier: the de-duplication path, not only its lookup. */
const REPEAT_EVERY = 4;
/** Leads routed in turn; far more than the connections, so no two routings race for one lead. */
const ROUTING_POOL = 2000;
const AGENTS = 3;
/** Leads routed one after another through the gateway, for the latency one routing takes. */
const SEQUENTIAL_ROUTINGS = 300;
const ROUTING_P99_GOAL_MS = 5;
const CAPTURE_GOAL = 0.3;
const SOURCES = ['Zillow', 'Website', 'Open House', 'Referral'];

const round = (n: number): number => Math.round(n * 1000) / 1000;

interface Api {
  origin: string;
  headers: Record<string, string>;
}

async function post(api: Api, path: string, body: unknown, status: number): Promise<unknown> {
  const withBody =
    body === undefined
      ? {}
      : { headers: { ...api.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const res = await expectStatus(`${api.origin}${path}`, status, { method: 'POST', headers: api.headers, ...withBody });
  return JSON.parse(res.text) as unknown;
}

/** A capture body for person `p` (E.164-valid US numbers, one per person). */
export function person(p: number, listingId: string): Record<string, unknown> {
  return {
    name: `Bench Buyer ${p}`,
    email: `buyer${p}@bench.example`,
    phone: `+1 512 ${200 + (Math.floor(p / 10_000) % 800)} ${String(p % 10_000).padStart(4, '0')}`,
    source: SOURCES[p % SOURCES.length],
    message: 'Is it still available? Could we see it this weekend?',
    propertyInterests: [{ listingId }],
  };
}

/** Bodies for every capture of a run: new people, each 4th a repeat. One sequence over warm-up and measurement. */
export function captures(listingId: string, start: number): () => { body: string } {
  let n = start;
  return () => {
    const i = n++;
    return {
      body: JSON.stringify(person(i % REPEAT_EVERY === REPEAT_EVERY - 1 ? i - (REPEAT_EVERY - 1) : i, listingId)),
    };
  };
}

/** Routes each lead in turn, one call at a time; the p50 and p99 of the calls' times, ms. */
async function oneAfterAnother(api: Api, leadIds: string[]): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (const leadId of leadIds) {
    const started = performance.now();
    await post(api, `/v1/leads/${leadId}/route`, undefined, 200);
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { p50: round(ms[Math.ceil(0.5 * ms.length) - 1]), p99: round(ms[Math.ceil(0.99 * ms.length) - 1]) };
}

function compare(label: string, product: TargetResult, bare: TargetResult, note: string, goal?: number): Ratio[] {
  const ratio = round(product.measured.rps.mean / bare.measured.rps.mean);
  return [
    {
      name: `${label}: throughput gateway/bare`,
      value: ratio,
      ...(goal === undefined
        ? { note: `req/s mean; ${note}; no goal` }
        : {
            goal: { min: goal },
            verdict: ratio >= goal ? ('PASS' as const) : ('BELOW TARGET' as const),
            note: `req/s mean; ${note}`,
          }),
    },
    {
      name: `${label}: p99 latency gateway/bare`,
      value: round(product.measured.latencyMs.p99 / bare.measured.latencyMs.p99),
      note: 'higher is slower; no goal',
    },
  ];
}

export const leads: Scenario = {
  name: 'leads',
  description:
    'POST /v1/leads (capture with de-duplication, scoring, listing summaries, outbox and timeline) and POST /v1/leads/:id/route (round robin, capacity slot, assignment) through the gateway edge (embedded profile, SQLite), and POST /v1/routing/preview (the decision alone), each vs bare Fastify answering the same JSON',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
    const auth = { authorization: `Bearer ${adminApiKey}` };
    const json = { ...auth, 'content-type': 'application/json' };

    ctx.log('starting the embedded product');
    const gateway = await ctx.servers.start('gateway', {
      kind: 'embedded',
      dataDir: await ctx.tempDir('leads'),
      adminApiKey,
      rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      logLevel: 'warn',
    });
    const api: Api = { origin: gateway.origin, headers: auth };
    const listing = (await post(api, '/v1/listings', listingBody(), 201)) as { id: string };
    for (let i = 0; i < AGENTS; i++)
      await post(api, '/v1/agents', { name: `Agent ${i}`, email: `agent${i}@bench.example`, capacity: 1000 }, 201);

    // Setup leads come from a range of people the measured runs never reach.
    const sample = await post(api, '/v1/leads', person(10_000_000, listing.id), 201);
    const pool: string[] = [];
    const make = captures(listing.id, 10_000_001);
    for (let i = 0; pool.length < ROUTING_POOL; i++) {
      const res = await fetch(`${api.origin}/v1/leads`, { method: 'POST', headers: json, body: make().body });
      const lead = (await res.json()) as { id: string };
      if (res.status === 201) pool.push(lead.id);
    }
    const routed = await post(api, `/v1/leads/${pool[0]}/route`, undefined, 200);
    ctx.log(`routing ${SEQUENTIAL_ROUTINGS} leads one after another`);
    const routing = await oneAfterAnother(api, pool.slice(1, 1 + SEQUENTIAL_ROUTINGS));
    const decision = await post(api, '/v1/routing/preview', { leadId: pool[0] }, 200);

    ctx.log('starting bare Fastify with the same answers');
    const bare = await ctx.servers.start('bare', {
      kind: 'bare',
      routes: [
        { method: 'POST', url: '/v1/leads', body: sample, status: 201 },
        { method: 'POST', url: '/v1/leads/:id/route', body: routed },
        { method: 'POST', url: '/v1/routing/preview', body: decision },
      ],
    });

    // The floor of the same loop on this machine: one request at a time to a server that does nothing.
    const routingBare = await oneAfterAnother(
      { origin: bare.origin, headers: auth },
      pool.slice(1, 1 + SEQUENTIAL_ROUTINGS),
    );

    let next = 0;
    const nextLead = () => pool[next++ % pool.length];
    const route = () => ({ path: `/v1/leads/${nextLead()}/route` });
    const preview = () => ({ body: JSON.stringify({ leadId: nextLead() }) });
    const targets: TargetResult[] = [];
    const measure = async (
      server: ServerHandle,
      path: string,
      description: string,
      vary: () => { path?: string; body?: string },
    ) => {
      // Same headers for product and baseline; only the routing call has no body.
      const headers = path.endsWith('/route') ? auth : json;
      const result = await measureTarget(ctx, server, { path, method: 'POST', headers, description, vary });
      targets.push(result);
      return result;
    };

    const captureGw = await measure(
      gateway,
      '/v1/leads',
      'embedded profile: capture with de-duplication (every 4th a repeat), E.164, scoring, listing summary, outbox, timeline',
      captures(listing.id, 0),
    );
    const captureBare = await measure(
      bare,
      '/v1/leads',
      'plain fastify(), parses the same bodies, answers the same lead',
      captures(listing.id, 0),
    );
    const routeGw = await measure(
      gateway,
      '/v1/leads/:id/route',
      `embedded profile: round robin over ${AGENTS} agents, capacity slot, assignment write and activity, ${ROUTING_POOL} leads in turn`,
      route,
    );
    const routeBare = await measure(
      bare,
      '/v1/leads/:id/route',
      'plain fastify(), answers the same routed lead',
      route,
    );
    const previewGw = await measure(
      gateway,
      '/v1/routing/preview',
      'embedded profile: the routing decision for { leadId }, nothing written',
      preview,
    );
    const previewBare = await measure(
      bare,
      '/v1/routing/preview',
      'plain fastify(), answers the same decision',
      preview,
    );

    // The product must have merged the repeats: otherwise the capture figures measure the wrong thing.
    const stored = JSON.parse((await expectStatus(`${api.origin}/v1/leads?limit=1`, 200, { headers: auth })).text) as {
      total: number;
    };
    const captured = captureGw.warmup.requests + captureGw.measured.requests;
    const people = ROUTING_POOL + 1 + Math.ceil((captured * (REPEAT_EVERY - 1)) / REPEAT_EVERY);
    const problems = targets.flatMap((t) => problemsOf(this.name, t));
    // Captures still in flight when autocannon stopped may or may not have landed.
    if (Math.abs(stored.total - people) > ctx.settings.connections * 2) {
      problems.push(
        `leads: ${stored.total} leads stored after ${captured} captures of about ${people} different people; de-duplication is off`,
      );
    }

    return {
      name: this.name,
      description: this.description,
      targets,
      ratios: [
        ...compare(
          'capture',
          captureGw,
          captureBare,
          `${round(captureGw.measured.rps.mean)} captures/s, ${stored.total} leads stored`,
          CAPTURE_GOAL,
        ),
        {
          name: `route: p99 ms, ${SEQUENTIAL_ROUTINGS} leads routed one after another through the gateway`,
          value: routing.p99,
          goal: { max: ROUTING_P99_GOAL_MS },
          verdict: routing.p99 <= ROUTING_P99_GOAL_MS ? 'PASS' : 'BELOW TARGET',
          note: `p50 ${routing.p50} ms; round robin over ${AGENTS} agents, capacity slot, assignment and activity`,
        },
        {
          name: `route: p99 ms, the same ${SEQUENTIAL_ROUTINGS} calls one after another to bare Fastify`,
          value: routingBare.p99,
          note: `p50 ${routingBare.p50} ms; this machine's floor for the row above (the client, loopback, one answer)`,
        },
        ...compare('route', routeGw, routeBare, `${round(routeGw.measured.rps.mean)} routings/s`),
        ...compare('preview', previewGw, previewBare, `${round(previewGw.measured.rps.mean)} decisions/s`),
      ],
      problems,
    };
  },
};
