import { listingBody } from '@estate/testing';
import sharp from 'sharp';
import { enginesFromEnv, startDistributed, type DistributedCluster } from '../lib/cluster';
import { generateListing, random } from '../lib/generated-listings';
import { expectStatus } from '../lib/http';
import { measureTarget, percentile, problemsOf } from '../lib/measure';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult, TargetResult } from '../lib/scenario';
import { captures } from './leads';

const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
const GOALS = { getRatio: 0.25, capturesPerSecond: 500, lagP99Ms: 1000, importSeconds: 120 };
/** The write rate for the lag measurement. */
const WRITES_PER_SECOND = 200;
const WRITES_IN_FLIGHT = 64;
/** Every n-th write is followed to search, every m-th to an accepted photo (following all would double the load). */
const FOLLOW_SEARCH_EVERY = 5;
const FOLLOW_MEDIA_EVERY = 10;
const IMPORT_TARGET = 100_000;
/** Listings of another account written straight into the listings store for the lookups at size (BENCH_DISTRIBUTED_LISTINGS). */
const LISTINGS_AT_SIZE = 100_000;
const ITEMS_PER_JOB = 100;
const JOBS_IN_FLIGHT = 4;

const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

async function post(cluster: DistributedCluster, path: string, body: unknown, status: number): Promise<unknown> {
  const res = await expectStatus(`${cluster.origin}${path}`, status, {
    method: 'POST',
    headers: { ...cluster.auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return JSON.parse(res.text) as unknown;
}

/** Polls until `done` holds, every `everyMs`; the time it took, or NaN after `limitMs`. */
async function timeUntil(
  done: () => Promise<boolean>,
  from: number,
  everyMs: number,
  limitMs: number,
): Promise<number> {
  while (performance.now() - from < limitMs) {
    if (await done().catch(() => false)) return performance.now() - from;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return Number.NaN;
}

/**
 * Open-loop writes at `perSecond` for `seconds`; some acknowledged writes are followed until the
 * listing is found in search, others until a photo upload to it is accepted.
 */
async function eventLag(ctx: ScenarioContext, cluster: DistributedCluster, seconds: number, run: string) {
  const photo = await sharp({ create: { width: 32, height: 24, channels: 3, background: '#468' } })
    .jpeg()
    .toBuffer();
  const writeMs: number[] = [];
  const searchLag: number[] = [];
  const mediaLag: number[] = [];
  let failedWrites = 0;
  let lost = 0;
  const inFlight = new Set<Promise<void>>();
  const source = `lag-${run}`;
  const follow = async (n: number, id: string, acked: number) => {
    if (n % FOLLOW_SEARCH_EVERY === 0) {
      const lag = await timeUntil(
        async () => {
          const res = await fetch(`${cluster.origin}/v1/listings?source=${source}&externalId=W-${n}&limit=1`, {
            headers: cluster.auth,
          });
          return res.ok && ((await res.json()) as { total: number }).total === 1;
        },
        acked,
        25,
        60_000,
      );
      if (Number.isNaN(lag)) lost++;
      else searchLag.push(lag);
    }
    if (n % FOLLOW_MEDIA_EVERY === 0) {
      const lag = await timeUntil(
        async () => {
          const form = new FormData();
          form.append('file', new Blob([photo], { type: 'image/jpeg' }), 'front.jpg');
          const res = await fetch(`${cluster.origin}/v1/listings/${id}/media`, {
            method: 'POST',
            headers: cluster.auth,
            body: form,
          });
          await res.arrayBuffer();
          return res.status === 201;
        },
        acked,
        25,
        60_000,
      );
      if (Number.isNaN(lag)) lost++;
      else mediaLag.push(lag);
    }
  };
  ctx.log(`distributed: ${seconds}s of writes at ${WRITES_PER_SECOND}/s, following some to search and media`);
  const started = performance.now();
  let sent = 0;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * WRITES_PER_SECOND);
    while (sent < due && inFlight.size < WRITES_IN_FLIGHT) {
      const n = sent++;
      const t = performance.now();
      const task = fetch(`${cluster.origin}/v1/listings`, {
        method: 'POST',
        headers: { ...cluster.auth, 'content-type': 'application/json' },
        body: JSON.stringify(listingBody({ externalId: `W-${n}`, source })),
      })
        .then(async (res) => {
          const body = (await res.json()) as { id?: string };
          const acked = performance.now();
          if (res.status !== 201 || !body.id) {
            failedWrites++;
            return;
          }
          writeMs.push(acked - t);
          await follow(n, body.id, acked);
        })
        .catch(() => void failedWrites++)
        .finally(() => inFlight.delete(task));
      inFlight.add(task);
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  const writingMs = performance.now() - started;
  await Promise.all([...inFlight]);
  return {
    achievedPerSecond: (writeMs.length / writingMs) * 1000,
    sent,
    failedWrites,
    lost,
    writeP99: percentile(writeMs, 99),
    search: { p50: percentile(searchLag, 50), p99: percentile(searchLag, 99), n: searchLag.length },
    media: { p50: percentile(mediaLag, 50), p99: percentile(mediaLag, 99), n: mediaLag.length },
  };
}

/**
 * Writes `count` generated listings of another account straight into the listings service's collection (documents
 * as the service stores them: `_id` is the id), in batches; the product's own listing is then one among them.
 */
async function fillListings(mongodbUrl: string, database: string, count: number): Promise<number> {
  const { default: mongoose } = await import('mongoose');
  const client = await mongoose.mongo.MongoClient.connect(mongodbUrl);
  const started = performance.now();
  try {
    const listings = client.db(database).collection<{ _id: string }>('listings');
    const rnd = random(7);
    for (let i = 0; i < count; i += 2000) {
      const batch = Array.from({ length: Math.min(2000, count - i) }, (_, k) => {
        const { id, ...listing } = generateListing(i + k, rnd);
        return { ...listing, _id: `${id}_filler`, accountId: 'acc_bench_filler' };
      });
      await listings.insertMany(batch, { ordered: false });
    }
  } finally {
    await client.close();
  }
  return (performance.now() - started) / 1000;
}

/** `calls` requests one after another; their times in ms. */
async function oneAtATime(calls: number, call: (i: number) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await call(i);
    times.push(performance.now() - started);
  }
  return times;
}

/** Bulk jobs of 100 items, a few in flight, until `items` listings are in; listings/s. */
async function importRate(ctx: ScenarioContext, cluster: DistributedCluster, items: number, run: string) {
  const jobs = Math.ceil(items / ITEMS_PER_JOB);
  ctx.log(`distributed: importing ${items} listings in ${jobs} bulk jobs, ${JOBS_IN_FLIGHT} at a time`);
  let next = 0;
  let failed = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < jobs) {
      const j = next++;
      const listings = Array.from({ length: ITEMS_PER_JOB }, (_, i) =>
        listingBody({ externalId: `I${j}-${i}`, source: `import-${run}` }),
      );
      const { jobId } = (await post(cluster, '/v1/listings/bulk', { listings }, 202)) as { jobId: string };
      for (;;) {
        const res = await fetch(`${cluster.origin}/v1/jobs/${jobId}`, { headers: cluster.auth });
        const job = (await res.json()) as { state: string; progress: { failed: number } };
        if (['succeeded', 'partially_failed', 'failed'].includes(job.state)) {
          failed += job.progress.failed;
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  await Promise.all(Array.from({ length: JOBS_IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { items: jobs * ITEMS_PER_JOB, seconds, perSecond: (jobs * ITEMS_PER_JOB) / seconds, failed };
}

export const distributed: Scenario = {
  name: 'distributed',
  description:
    'The distributed profile (gateway, listings, media, leads as processes on the engines in MONGODB_URL, NATS_URL, ' +
    'ELASTICSEARCH_URL): GET /v1/listings/:id through the gateway vs bare Fastify, lead capture through the gateway, ' +
    `event lag (write acknowledged → found in search, → photo accepted) at ${WRITES_PER_SECOND} writes/s, and a bulk ` +
    'import rate projected to 100k listings, then GET and PATCH of one listing, one call after another, with 100,000 ' +
    "listings of another account in the listings store. BENCH_IMPORT_ITEMS sets how many listings the import measures (default 2000), BENCH_DISTRIBUTED_LISTINGS the store's size for the lookups.",

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const engines = enginesFromEnv();
    if (!engines) {
      ctx.log('distributed: MONGODB_URL, NATS_URL and ELASTICSEARCH_URL are not all set; nothing measured');
      return {
        name: this.name,
        description: this.description,
        targets: [],
        ratios: [],
        problems: ['distributed: engines not set'],
      };
    }
    const quick = ctx.settings.mode === 'quick';
    const run = Math.random().toString(36).slice(2, 8);
    ctx.log('distributed: starting gateway, listings, media and leads');
    const cluster = await startDistributed(ctx, engines, { rateLimitPerMinute: RATE_LIMIT_PER_MINUTE });
    const targets: TargetResult[] = [];
    const ratios: Ratio[] = [];
    const problems: string[] = [];
    /** One row; a row that fails is reported as a problem and the others still run. */
    const row = async (what: string, measure: () => Promise<void>) => {
      try {
        await measure();
      } catch (err) {
        ctx.log(`distributed: ${what} failed: ${(err as Error).message}`);
        problems.push(`distributed: ${what} failed: ${(err as Error).message}`);
      }
    };
    const record = (ratio: Ratio) => {
      ctx.log(`distributed: ${ratio.name} = ${ratio.value} (${ratio.note})`);
      ratios.push(ratio);
    };
    try {
      const created = (await post(cluster, '/v1/listings', listingBody(), 201)) as { id: string };
      // A catalogue of some size behind the lookup, as in the measurement (800 listings).
      await importRate(ctx, cluster, quick ? 200 : 800, `${run}-seed`);

      await row('GET through the gateway', async () => {
        const path = `/v1/listings/${encodeURIComponent(created.id)}`;
        const fromProduct = await expectStatus(`${cluster.origin}${path}`, 200, { headers: cluster.auth });
        const bare = await ctx.servers.start('bare', {
          kind: 'bare',
          routes: [{ method: 'GET', url: '/v1/listings/:id', body: JSON.parse(fromProduct.text) as unknown }],
        });
        const getGw = await measureTarget(ctx, cluster.gateway, {
          path,
          headers: cluster.auth,
          description:
            'distributed: gateway (rate limit, key cache, signing) → listings process (signature check, store read)',
        });
        const getBare = await measureTarget(ctx, bare, {
          path,
          headers: cluster.auth,
          description: 'plain fastify(), one route returning the same object',
        });
        await bare.stop();
        targets.push(getGw, getBare);
        const getRatio = getGw.measured.rps.mean / getBare.measured.rps.mean;
        record({
          name: 'GET /v1/listings/:id: throughput gateway/bare',
          value: round(getRatio),
          goal: { min: GOALS.getRatio },
          verdict: getRatio >= GOALS.getRatio ? 'PASS' : 'BELOW TARGET',
          note: `${round(getGw.measured.rps.mean, 0)} vs ${round(getBare.measured.rps.mean, 0)} req/s; p99 ${getGw.measured.latencyMs.p99} ms`,
        });
      });

      await row('lead capture', async () => {
        const capture = await measureTarget(ctx, cluster.gateway, {
          path: '/v1/leads',
          method: 'POST',
          headers: { ...cluster.auth, 'content-type': 'application/json' },
          description: 'distributed: lead capture through the gateway (every 4th a repeat: the de-duplication path)',
          vary: captures(created.id, 0),
        });
        targets.push(capture);
        record({
          name: 'lead capture through the gateway, captures/s',
          value: round(capture.measured.rps.mean, 1),
          goal: { min: GOALS.capturesPerSecond },
          verdict: capture.measured.rps.mean >= GOALS.capturesPerSecond ? 'PASS' : 'BELOW TARGET',
          note: `p50 ${capture.measured.latencyMs.p50} ms, p99 ${capture.measured.latencyMs.p99} ms, ${capture.measured.non2xx} non-2xx, ${capture.measured.timeouts} timeouts`,
        });
      });

      await row('event lag', async () => {
        const lag = await eventLag(ctx, cluster, quick ? 5 : ctx.settings.durationSec, run);
        const lagNote = `${round(lag.achievedPerSecond, 0)} writes/s achieved of ${WRITES_PER_SECOND} (write p99 ${round(lag.writeP99, 0)} ms, ${lag.failedWrites} failed, ${lag.lost} not seen within 60 s)`;
        for (const [what, figures] of [
          ['search', lag.search],
          ['photo upload accepted', lag.media],
        ] as const) {
          record({
            name: `event lag p99, write acknowledged → ${what}, ms`,
            value: round(figures.p99, 0),
            goal: { max: GOALS.lagP99Ms },
            verdict:
              figures.p99 <= GOALS.lagP99Ms && lag.achievedPerSecond >= WRITES_PER_SECOND * 0.95
                ? 'PASS'
                : 'BELOW TARGET',
            note: `p50 ${round(figures.p50, 0)} ms over ${figures.n} followed writes; ${lagNote}`,
          });
        }
      });

      await row('import', async () => {
        const envItems = Number.parseInt(process.env.BENCH_IMPORT_ITEMS ?? '', 10);
        const imported = await importRate(ctx, cluster, envItems > 0 ? envItems : quick ? 500 : 2000, run);
        const projected = IMPORT_TARGET / imported.perSecond;
        record({
          name: 'import 100k listings through bulk jobs, s (projected)',
          value: round(projected, 0),
          goal: { max: GOALS.importSeconds },
          verdict: projected <= GOALS.importSeconds && imported.failed === 0 ? 'PASS' : 'BELOW TARGET',
          note: `${imported.items} listings measured in ${round(imported.seconds, 1)} s (${round(imported.perSecond, 1)}/s, ${JOBS_IN_FLIGHT} jobs in flight), ${imported.failed} items failed`,
        });
      });
      await row('lookups at size', async () => {
        const envSize = Number.parseInt(process.env.BENCH_DISTRIBUTED_LISTINGS ?? '', 10);
        const size = envSize > 0 ? envSize : quick ? 20_000 : LISTINGS_AT_SIZE;
        ctx.log(`distributed: writing ${size} listings of another account into the listings store`);
        const fillSeconds = await fillListings(engines.mongodb, cluster.database('listings'), size);
        const path = `${cluster.origin}/v1/listings/${encodeURIComponent(created.id)}`;
        const gets = await oneAtATime(200, async () => {
          await expectStatus(path, 200, { headers: cluster.auth });
        });
        const patches = await oneAtATime(50, async (i) => {
          await expectStatus(path, 200, {
            method: 'PATCH',
            headers: { ...cluster.auth, 'content-type': 'application/json' },
            body: JSON.stringify({ pricing: { listPrice: 400_000 + i } }),
          });
        });
        const note = (times: number[]) =>
          `p50 ${round(percentile(times, 50), 1)} ms, p99 ${round(percentile(times, 99), 1)} ms over ${times.length} calls one after another, ${size.toLocaleString('en-US')} other listings written into the store in ${round(fillSeconds, 0)} s`;
        record({
          name: `GET /v1/listings/:id with ${size.toLocaleString('en-US')} listings in the store, p95 ms`,
          value: round(percentile(gets, 95), 1),
          note: note(gets),
        });
        record({
          name: `PATCH /v1/listings/:id with ${size.toLocaleString('en-US')} listings in the store, p95 ms`,
          value: round(percentile(patches, 95), 1),
          note: note(patches),
        });
      });
    } finally {
      await cluster.stop();
    }
    return {
      name: this.name,
      description: this.description,
      targets,
      ratios,
      problems: [...problems, ...targets.flatMap((t) => problemsOf(this.name, t))],
    };
  },
};
