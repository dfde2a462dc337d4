import { randomBytes } from 'node:crypto';
import { listingBody } from '@estate/testing';
import { expectStatus } from '../lib/http';
import { measureTarget, problemsOf } from '../lib/measure';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult } from '../lib/scenario';

/** The gateway path should keep at least this share of bare Fastify's throughput. */
const MIN_THROUGHPUT_RATIO = 0.5;
/**
 * The product's default (1200/min per key) would turn nearly every benchmark request into a 429;
 * the limiter still runs on every request, it just never trips.
 */
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;

const round = (n: number): number => Math.round(n * 1000) / 1000;

export const listingsGet: Scenario = {
  name: 'listings-get',
  description:
    'GET /v1/listings/:id through the gateway edge (embedded profile, SQLite) vs bare Fastify answering the same JSON',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
    const auth = { authorization: `Bearer ${adminApiKey}` };

    ctx.log('starting the embedded product');
    const gateway = await ctx.servers.start('gateway', {
      kind: 'embedded',
      dataDir: await ctx.tempDir('embedded'),
      adminApiKey,
      rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      logLevel: 'warn',
    });

    const created = await expectStatus(`${gateway.origin}/v1/listings`, 201, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(listingBody()),
    });
    const { id } = JSON.parse(created.text) as { id: string };
    const path = `/v1/listings/${encodeURIComponent(id)}`;
    const fromProduct = await expectStatus(`${gateway.origin}${path}`, 200, { headers: auth });

    ctx.log('starting bare Fastify with the same body');
    const bare = await ctx.servers.start('bare', {
      kind: 'bare',
      routes: [{ method: 'GET', url: '/v1/listings/:id', body: JSON.parse(fromProduct.text) as unknown }],
    });
    const fromBare = await expectStatus(`${bare.origin}${path}`, 200, { headers: auth });
    if (fromBare.text !== fromProduct.text) {
      throw new Error(
        `bare Fastify's body differs from the product's (${fromBare.text.length} vs ${fromProduct.text.length} bytes); the comparison would be unfair`,
      );
    }

    // Same URL path and headers for both, so request parsing costs the same.
    const gw = await measureTarget(ctx, gateway, {
      path,
      headers: auth,
      description: 'embedded profile: rate limit, API-key auth, zod validation and serialization, SQLite read',
    });
    const base = await measureTarget(ctx, bare, {
      path,
      headers: auth,
      description: 'plain fastify(), one route returning the same object',
    });

    const throughput = gw.measured.rps.mean / base.measured.rps.mean;
    const ratios: Ratio[] = [
      {
        name: 'throughput gateway/bare',
        value: round(throughput),
        goal: { min: MIN_THROUGHPUT_RATIO },
        verdict: throughput >= MIN_THROUGHPUT_RATIO ? 'PASS' : 'BELOW TARGET',
        note: `req/s mean; goal ≥ ${MIN_THROUGHPUT_RATIO}`,
      },
      {
        name: 'p99 latency gateway/bare',
        value: round(gw.measured.latencyMs.p99 / base.measured.latencyMs.p99),
        note: 'higher is slower; no goal',
      },
    ];

    return {
      name: this.name,
      description: this.description,
      targets: [gw, base],
      ratios,
      problems: [gw, base].flatMap((t) => problemsOf(this.name, t)),
    };
  },
};
