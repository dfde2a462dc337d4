import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { Job, JobProgress } from '@estate/contracts/jobs';
import { listingBody, readSse } from '@estate/testing';
import { freePort, natsToolsAuth, natsUserEnv } from '../lib/cluster';
import { expectStatus } from '../lib/http';
import { percentile } from '../lib/measure';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult } from '../lib/scenario';

const ITEMS_PER_JOB = 100;
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** Single-job latency runs (the median is reported). */
const LATENCY_RUNS = { full: 5, quick: 2 };
/** The 50 jobs; on FerretDB (which scans whole collections) 50 jobs take a quarter of an hour, so the distributed run does fewer unless told. */
const SUSTAINED_JOBS = { embedded: 50, distributed: 10, quick: 5 };
const FINAL = ['succeeded', 'partially_failed', 'failed'];
/** A whole feed imported through bulk jobs (BENCH_IMPORT_LISTINGS sets it), with this many jobs in flight. */
const IMPORT_LISTINGS = { full: 100_000, quick: 2_000 };
const IMPORT_JOBS_IN_FLIGHT = 8;
/** The goal: 100,000 listings in 30 s (3,333 listings/s); a smaller import is held to the same rate. */
const IMPORT_GOAL_LISTINGS_PER_SEC = 100_000 / 30;
const BULK_SINGLE_GOAL = 5;

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Api {
  origin: string;
  auth: Record<string, string>;
}

/** Where a profile's gateway answers, and how to stop what was started for it. */
interface Profile {
  name: 'embedded' | 'distributed';
  api: Api;
  /** Lines the product printed while measuring (at `warn`, each one is worth a look). */
  logLines(): number;
  stop(): Promise<void>;
}

const items = (prefix: string, n = ITEMS_PER_JOB) =>
  Array.from({ length: n }, (_, i) => listingBody({ externalId: `${prefix}-${i}`, source: 'bench' }));

async function submit(api: Api, listings: unknown[]): Promise<string> {
  const res = await expectStatus(`${api.origin}/v1/listings/bulk`, 202, {
    method: 'POST',
    headers: { ...api.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ listings }),
  });
  return (JSON.parse(res.text) as { jobId: string }).jobId;
}

/** Follows the job's event stream to its final state (as a client would), then reads the job. */
async function finished(api: Api, jobId: string): Promise<Job> {
  const res = await fetch(`${api.origin}/v1/jobs/${jobId}/events`, {
    headers: api.auth,
    signal: AbortSignal.timeout(30 * 60_000),
  });
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${jobId}/events answered ${res.status}: ${await res.text()}`);
  const { events } = await readSse(res);
  const last = events.length > 0 ? (JSON.parse(events[events.length - 1].data) as JobProgress) : undefined;
  if (!last || !FINAL.includes(last.state)) throw new Error(`the event stream of ${jobId} ended before the job did`);
  const job = JSON.parse(
    (await expectStatus(`${api.origin}/v1/jobs/${jobId}`, 200, { headers: api.auth })).text,
  ) as Job;
  if (job.state !== 'succeeded')
    throw new Error(`job ${jobId} ended ${job.state}: ${JSON.stringify(job.errors.slice(0, 3))}`);
  return job;
}

/** A feed of `count` listings sent as 100-item jobs, a few in flight, each followed to its end; seconds taken. */
async function importFeed(api: Api, prefix: string, count: number): Promise<number> {
  const started = performance.now();
  const jobs = Math.ceil(count / ITEMS_PER_JOB);
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < jobs) {
      const j = next++;
      await finished(
        api,
        await submit(api, items(`${prefix}-${j}`, Math.min(ITEMS_PER_JOB, count - j * ITEMS_PER_JOB))),
      );
    }
  };
  await Promise.all(Array.from({ length: IMPORT_JOBS_IN_FLIGHT }, sender));
  return (performance.now() - started) / 1000;
}

/** `count` single `POST /v1/listings` calls over `connections` concurrent clients; per-call latencies in ms. */
async function singles(api: Api, prefix: string, count: number, connections: number): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const client = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const t = performance.now();
      await expectStatus(`${api.origin}/v1/listings`, 201, {
        method: 'POST',
        headers: { ...api.auth, 'content-type': 'application/json' },
        body: JSON.stringify(listingBody({ externalId: `${prefix}-${i}`, source: 'bench' })),
      });
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: Math.min(connections, count) }, client));
  return latencies;
}

async function measure(
  ctx: ScenarioContext,
  profile: Profile,
  jobs: number,
): Promise<{ ratios: Ratio[]; problems: string[] }> {
  const { api } = profile;
  const label = profile.name;
  const logBefore = profile.logLines();
  const quick = ctx.settings.mode === 'quick';
  const connections = ctx.settings.connections;

  ctx.log(`bulk/${label}: warm-up job`);
  await finished(api, await submit(api, items(`${label}-warm`)));

  const runs = quick ? LATENCY_RUNS.quick : LATENCY_RUNS.full;
  ctx.log(`bulk/${label}: ${runs} single ${ITEMS_PER_JOB}-item jobs, POST to succeeded`);
  const jobMs: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    await finished(api, await submit(api, items(`${label}-one-${r}`)));
    jobMs.push(performance.now() - t);
  }

  const total = jobs * ITEMS_PER_JOB;
  ctx.log(`bulk/${label}: ${jobs} consecutive jobs (${total} listings)`);
  const sustainedStart = performance.now();
  const ids: string[] = [];
  for (let j = 0; j < jobs; j++) ids.push(await submit(api, items(`${label}-run-${j}`)));
  for (const id of ids) await finished(api, id);
  const bulkPerSec = total / ((performance.now() - sustainedStart) / 1000);

  // The distributed import is projected from a shorter run by the `distributed` scenario: a whole feed
  // through the test engine takes the better part of an hour.
  const importTotal =
    label === 'embedded'
      ? Number.parseInt(process.env.BENCH_IMPORT_LISTINGS ?? '', 10) || IMPORT_LISTINGS[ctx.settings.mode]
      : 0;
  if (importTotal > 0)
    ctx.log(
      `bulk/${label}: importing ${importTotal} listings through bulk jobs, ${IMPORT_JOBS_IN_FLIGHT} jobs in flight`,
    );
  const importSec = importTotal > 0 ? await importFeed(api, `${label}-import`, importTotal) : 0;

  ctx.log(`bulk/${label}: ${total} single POST /v1/listings, ${connections} at a time`);
  const singlesStart = performance.now();
  const singleMs = await singles(api, `${label}-single`, total, connections);
  const singlesPerSec = total / ((performance.now() - singlesStart) / 1000);
  ctx.log(`bulk/${label}: ${round(bulkPerSec)} listings/s in bulk, ${round(singlesPerSec)} listings/s one by one`);

  const ratios: Ratio[] = [
    {
      name: `${label}: one ${ITEMS_PER_JOB}-item job, POST to succeeded, median ms`,
      value: round(median(jobMs)),
      note: `${runs} jobs one after another; min ${round(Math.min(...jobMs))}, max ${round(Math.max(...jobMs))}; followed on GET /v1/jobs/:id/events`,
    },
    {
      name: `${label}: listings/s over ${jobs} consecutive bulk jobs`,
      value: round(bulkPerSec),
      note: `${total} listings created; all ${jobs} POSTed, then followed to succeeded`,
    },
    {
      name: `${label}: listings/s as ${total} single POST /v1/listings`,
      value: round(singlesPerSec),
      note: `${connections} concurrent clients; per call p50 ${round(percentile(singleMs, 50), 2)} ms, p99 ${round(percentile(singleMs, 99), 2)} ms`,
    },
    {
      name: `${label}: bulk / single throughput`,
      value: round(bulkPerSec / singlesPerSec, 3),
      goal: { min: BULK_SINGLE_GOAL },
      verdict: bulkPerSec / singlesPerSec >= BULK_SINGLE_GOAL ? 'PASS' : 'BELOW TARGET',
      note: 'listings/s in 100-item jobs over listings/s as single POSTs; above 1, batching pays',
    },
  ];
  if (importTotal > 0)
    ratios.push({
      name: `${label}: import ${importTotal.toLocaleString('en-US')} listings through bulk jobs, seconds`,
      value: round(importSec),
      goal: { max: round(importTotal / IMPORT_GOAL_LISTINGS_PER_SEC) },
      verdict: importSec <= importTotal / IMPORT_GOAL_LISTINGS_PER_SEC ? 'PASS' : 'BELOW TARGET',
      note: `${Math.ceil(importTotal / ITEMS_PER_JOB)} jobs of ${ITEMS_PER_JOB}, ${IMPORT_JOBS_IN_FLIGHT} in flight, each followed to succeeded; ${round(importTotal / importSec)} listings/s`,
    });
  const logged = profile.logLines() - logBefore;
  return {
    ratios,
    problems: logged > 0 ? [`bulk/${label}: the product printed ${logged} log lines while measured (see stderr)`] : [],
  };
}

async function embedded(ctx: ScenarioContext): Promise<Profile> {
  const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
  const server = await ctx.servers.start('embedded', {
    kind: 'embedded',
    dataDir: await ctx.tempDir('bulk'),
    adminApiKey,
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    logLevel: 'warn',
  });
  return {
    name: 'embedded',
    api: { origin: server.origin, auth: { authorization: `Bearer ${adminApiKey}` } },
    logLines: () => server.logLines(),
    stop: () => server.stop(),
  };
}

/**
 * The distributed profile as far as bulk needs it: the gateway and one listings process from
 * `dist/`, on the engines in the environment, with databases and an index of their own that
 * are dropped afterwards.
 */
async function distributed(
  ctx: ScenarioContext,
  engines: { mongodb: string; nats: string; elasticsearch: string },
): Promise<Profile> {
  const run = randomBytes(4).toString('hex');
  const root = resolve(__dirname, '..', '..', '..');
  const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
  const ports = { gateway: await freePort(), listings: await freePort() };
  const common = {
    PATH: process.env.PATH ?? '',
    MONGODB_URL: engines.mongodb,
    NATS_URL: engines.nats,
    // Its own streams and work queue: nothing else on the NATS server takes or sends these jobs.
    NATS_NAMESPACE: `bench_${run}`,
    INTERNAL_SIGNING_SECRET: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  };
  const children: ChildProcess[] = [];
  // The bench leaves on Ctrl-C with process.exit(): these are not the server pool's children, so they go here.
  const killOnExit = () => children.forEach((c) => c.kill('SIGKILL'));
  process.once('exit', killOnExit);
  let lines = 0;
  const start = (name: string, env: Record<string, string>) => {
    const child = spawn(process.execPath, [join(root, 'dist', 'services', name, 'main.js')], {
      env: { ...common, ...natsUserEnv(name), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n').filter(Boolean)) {
          lines++;
          if (lines <= 20) ctx.log(`[${name}] ${line}`);
        }
      });
    }
    children.push(child);
  };
  const stop = async () => {
    process.off('exit', killOnExit);
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((done) => {
            if (c.exitCode !== null || c.signalCode !== null) return done();
            const kill = setTimeout(() => c.kill('SIGKILL'), 10_000);
            c.once('exit', () => {
              clearTimeout(kill);
              done();
            });
            c.kill('SIGTERM');
          }),
      ),
    );
    const { default: mongoose } = await import('mongoose');
    const conn = await mongoose.createConnection(engines.mongodb).asPromise();
    try {
      for (const db of ['gateway', 'listings']) await conn.useDb(`bench_${run}_${db}`).dropDatabase();
    } finally {
      await conn.close();
    }
    const indices = await fetch(`${engines.elasticsearch}/bench-${run}-listings-*`);
    if (indices.ok)
      for (const index of Object.keys((await indices.json()) as object))
        await fetch(`${engines.elasticsearch}/${index}`, { method: 'DELETE' });
    const [{ connect }, { jetstreamManager }] = await Promise.all([
      import('@nats-io/transport-node'),
      import('@nats-io/jetstream'),
    ]);
    const nc = await connect({ servers: engines.nats, ...natsToolsAuth(), name: 'bench-bulk-cleanup' });
    try {
      const jsm = await jetstreamManager(nc);
      for await (const s of jsm.streams.list())
        if (s.config.name.startsWith(`bench_${run}_`)) await jsm.streams.delete(s.config.name);
    } finally {
      await nc.close();
    }
  };

  start('listings', {
    PORT: String(ports.listings),
    MONGODB_DATABASE: `bench_${run}_listings`,
    ELASTICSEARCH_URL: engines.elasticsearch,
    ELASTICSEARCH_INDEX: `bench-${run}-listings`,
  });
  start('gateway', {
    PORT: String(ports.gateway),
    MONGODB_DATABASE: `bench_${run}_gateway`,
    LISTINGS_URL: `http://127.0.0.1:${ports.listings}`,
    ADMIN_API_KEY: adminApiKey,
    RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
  });
  const deadline = Date.now() + 60_000;
  // The gateway is not "ready" without media and leads, which bulk does not need: it only has to be up.
  for (const url of [
    `http://127.0.0.1:${ports.listings}/health/ready`,
    `http://127.0.0.1:${ports.gateway}/health/live`,
  ]) {
    while ((await fetch(url).catch(() => undefined))?.ok !== true) {
      if (Date.now() > deadline || children.some((c) => c.exitCode !== null)) {
        await stop();
        throw new Error(`the distributed services did not come up (${url})`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    name: 'distributed',
    api: { origin: `http://127.0.0.1:${ports.gateway}`, auth: { authorization: `Bearer ${adminApiKey}` } },
    logLines: () => lines,
    stop,
  };
}

export const bulk: Scenario = {
  name: 'bulk',
  description:
    `Bulk create through the gateway: one ${ITEMS_PER_JOB}-item job from POST to succeeded, and listings/s over consecutive jobs, ` +
    'next to the same number of single POST /v1/listings in the same run; embedded profile, and distributed (gateway + listings processes) ' +
    'when MONGODB_URL, NATS_URL and ELASTICSEARCH_URL are set. BENCH_BULK_JOBS sets the number of consecutive jobs.',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const quick = ctx.settings.mode === 'quick';
    const override = Number.parseInt(process.env.BENCH_BULK_JOBS ?? '', 10);
    const jobsFor = (profile: 'embedded' | 'distributed') =>
      override > 0 ? override : quick ? SUSTAINED_JOBS.quick : SUSTAINED_JOBS[profile];
    const ratios: Ratio[] = [];
    const problems: string[] = [];

    const profiles: (() => Promise<Profile>)[] = [() => embedded(ctx)];
    const { MONGODB_URL: mongodb, NATS_URL: nats, ELASTICSEARCH_URL: elasticsearch } = process.env;
    if (mongodb && nats && elasticsearch) profiles.push(() => distributed(ctx, { mongodb, nats, elasticsearch }));
    else
      ctx.log(
        'bulk: MONGODB_URL, NATS_URL and ELASTICSEARCH_URL are not all set: the distributed profile is left out of this run',
      );

    for (const open of profiles) {
      const profile = await open();
      try {
        const measured = await measure(ctx, profile, jobsFor(profile.name));
        ratios.push(...measured.ratios);
        problems.push(...measured.problems);
      } finally {
        await profile.stop();
      }
    }
    return { name: this.name, description: this.description, targets: [], ratios, problems };
  },
};
