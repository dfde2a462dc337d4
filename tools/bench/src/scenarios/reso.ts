import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CITIES, random } from '../lib/generated-listings';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';
import { dropBenchIndex } from './search';

/** Listings held (BENCH_RESO_LISTINGS); the goals are stated at 100,000. */
const LISTINGS = (mode: 'full' | 'quick'): number =>
  Number(process.env.BENCH_RESO_LISTINGS) || (mode === 'quick' ? 20_000 : 100_000);
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
const SEED_TIMEOUT_MS = 30 * 60_000;
const FILTER_P95_GOAL_MS = 30;
const WALK_GOAL_PER_SEC = 5_000;
const PAGE = 1000;

/** A varied stream of `$filter`s with `$top=100` (fixed seed), each kind of field and operator. */
function filters(count: number): string[] {
  const rnd = random(11);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)];
  return Array.from({ length: count }, () => {
    const price = 100_000 + Math.floor(rnd() * 20) * 50_000;
    const filter = pick([
      `StandardStatus eq org.reso.metadata.enums.StandardStatus'Active' and ListPrice gt ${price}`,
      `City eq '${pick(CITIES).city.replace(/'/g, "''")}' and BedroomsTotal ge ${1 + Math.floor(rnd() * 4)}`,
      `StandardStatus in ('Active', 'Pending') and ListPrice le ${price}`,
      `ModificationTimestamp lt now() and PropertyType eq 'Residential'`,
      `ListPrice ge ${price} and ListPrice lt ${price + 200_000}`,
    ]);
    const order = pick(['', '&$orderby=ModificationTimestamp desc', '&$orderby=ListPrice desc']);
    return `$filter=${encodeURIComponent(filter)}&$top=100${order}`;
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const round = (n: number): number => Math.round(n * 100) / 100;

/** One query at a time for `seconds`: the latency a client sees. */
async function filterLatency(server: ServerHandle, auth: Record<string, string>, seconds: number, problems: string[]) {
  const list = filters(400);
  const took: number[] = [];
  const until = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < until; i++) {
    const started = performance.now();
    const res = await fetch(`${server.origin}/reso/odata/Property?${list[i % list.length]}`, { headers: auth });
    await res.arrayBuffer();
    took.push(performance.now() - started);
    if (res.status !== 200) problems.push(`reso: ${res.status} for ${list[i % list.length]}`);
  }
  took.sort((a, b) => a - b);
  return { count: took.length, p50: round(percentile(took, 50)), p95: round(percentile(took, 95)) };
}

/** A full replication walk with `$expand=Media`: every listing once, pages of 1000 through nextLink. */
async function walk(server: ServerHandle, auth: Record<string, string>, problems: string[]) {
  const started = performance.now();
  let records = 0;
  let next: string | undefined =
    `${server.origin}/reso/odata/Property?$orderby=ModificationTimestamp,ListingKey&$expand=Media`;
  while (next) {
    const res = await fetch(next, { headers: { ...auth, prefer: `odata.maxpagesize=${PAGE}` } });
    if (res.status !== 200) {
      problems.push(`reso walk: ${res.status}`);
      break;
    }
    const body = (await res.json()) as { value: unknown[]; '@odata.nextLink'?: string };
    records += body.value.length;
    next = body['@odata.nextLink'];
  }
  const seconds = (performance.now() - started) / 1000;
  return { records, seconds: round(seconds), perSec: Math.round(records / seconds) };
}

async function measure(
  ctx: ScenarioContext,
  label: string,
  server: ServerHandle,
  auth: Record<string, string>,
  listings: number,
  goals: boolean,
  ratios: Ratio[],
  problems: string[],
): Promise<void> {
  await filterLatency(server, auth, Math.min(ctx.settings.warmupSec, 2), []);
  const latency = await filterLatency(server, auth, Math.max(3, Math.round(ctx.settings.durationSec / 3)), problems);
  ctx.log(
    `${label}: Property $filter $top=100, ${latency.count} queries, p50 ${latency.p50} ms, p95 ${latency.p95} ms`,
  );
  ratios.push({
    name: `${label}: Property?$filter=…&$top=100 p95 ms`,
    value: latency.p95,
    ...(goals
      ? { goal: { max: FILTER_P95_GOAL_MS }, verdict: latency.p95 <= FILTER_P95_GOAL_MS ? 'PASS' : 'BELOW TARGET' }
      : {}),
    note: `p50 ${latency.p50} ms over ${latency.count} queries, one at a time, through the gateway edge`,
  });
  const replicated = await walk(server, auth, problems);
  if (replicated.records !== listings)
    problems.push(`reso ${label}: the walk read ${replicated.records} records of ${listings}`);
  ctx.log(`${label}: replication walk, ${replicated.records} records in ${replicated.seconds} s`);
  ratios.push({
    name: `${label}: replication walk with $expand=Media, records/s`,
    value: replicated.perSec,
    ...(goals
      ? { goal: { min: WALK_GOAL_PER_SEC }, verdict: replicated.perSec >= WALK_GOAL_PER_SEC ? 'PASS' : 'BELOW TARGET' }
      : {}),
    note: `${replicated.records} records in ${replicated.seconds} s, pages of ${PAGE} by nextLink`,
  });
}

export const reso: Scenario = {
  name: 'reso',
  description:
    'The RESO Web API through the gateway edge: Property $filter with $top=100, one query at a time, and a full replication walk with $expand=Media through nextLink, on the embedded product holding 100,000 generated listings in SQLite (BENCH_RESO_LISTINGS), and on Elasticsearch (ELASTICSEARCH_URL)',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const ratios: Ratio[] = [];
    const problems: string[] = [];
    const listings = LISTINGS(ctx.settings.mode);
    const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
    const auth = { authorization: `Bearer ${adminApiKey}` };
    const common = { kind: 'embedded' as const, adminApiKey, rateLimitPerMinute: RATE_LIMIT_PER_MINUTE };

    const label = `sqlite ${listings.toLocaleString('en-US')}`;
    const dataDir = await ctx.tempDir('reso');
    const spec = { ...common, dataDir, logLevel: 'warn' as const, search: { index: 'sqlite' as const } };
    ctx.log(`${label}: writing the listings into a data folder`);
    await (
      await ctx.servers.start(`${label} seed`, { ...spec, seedListings: listings }, { startTimeoutMs: SEED_TIMEOUT_MS })
    ).stop();
    const server = await ctx.servers.start(label, spec);
    try {
      await measure(ctx, label, server, auth, listings, true, ratios, problems);
    } finally {
      await server.stop();
    }

    const esUrl = process.env.ELASTICSEARCH_URL;
    if (!esUrl) ctx.log('ELASTICSEARCH_URL is not set: Elasticsearch is left out of this run');
    else {
      const alias = `bench-reso-${randomBytes(4).toString('hex')}`;
      const es = await ctx.servers.start(
        'elasticsearch',
        {
          ...common,
          dataDir: await ctx.tempDir('reso-es'),
          logLevel: 'warn',
          search: { index: 'elasticsearch', url: esUrl, alias },
          seedListings: listings,
        },
        { startTimeoutMs: SEED_TIMEOUT_MS },
      );
      try {
        await measure(
          ctx,
          `elasticsearch ${listings.toLocaleString('en-US')}`,
          es,
          auth,
          listings,
          false,
          ratios,
          problems,
        );
      } finally {
        await es.stop();
        await dropBenchIndex(esUrl, alias);
      }
    }
    return { name: 'reso', description: reso.description, targets: [], ratios, problems };
  },
};
