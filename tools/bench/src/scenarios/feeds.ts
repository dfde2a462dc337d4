import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Feed, FeedLedger } from '@estate/contracts/feeds';
import type { Job } from '@estate/contracts/jobs';
import { ResoTestSource, type SourceRecord } from '@estate/testing';
import sharp from 'sharp';
import { expectStatus } from '../lib/http';
import { percentile } from '../lib/measure';
import type { EmbeddedSpec } from '../lib/protocol';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';

const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
const SEED_TIMEOUT_MS = 30 * 60_000;
/** A run not over after this long is a problem of the bench run. */
const RUN_TIMEOUT_MS = 30 * 60_000;
const FINAL = ['succeeded', 'partially_failed', 'failed'];
/** The targets. */
const FIRST_SYNC_GOAL_SEC = 60;
const FIRST_SYNC_RSS_GOAL_MB = 300;
const INCREMENTAL_GOAL_SEC = 5;
/** The most the API lets a feed ask per page and per second: the bench measures the sync, not the budget. */
const PAGE_SIZE = 1000;
const REQUESTS_PER_SECOND = 100;
const PHOTOS_PER_LISTING = 5;
const BULK_ITEMS = 100;

const sizes = (mode: 'full' | 'quick') => ({
  listings: Number(process.env.BENCH_FEEDS_LISTINGS) || (mode === 'quick' ? 2_000 : 100_000),
  changedPercent: Number(process.env.BENCH_FEEDS_CHANGED_PERCENT) || 1,
  photoListings: Number(process.env.BENCH_FEEDS_PHOTO_LISTINGS) || (mode === 'quick' ? 200 : 10_000),
});

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;
const mb = (bytes: number): number => round(bytes / 1024 / 1024);

interface Api {
  origin: string;
  auth: Record<string, string>;
}

const json = { 'content-type': 'application/json' };

async function createFeed(api: Api, body: Record<string, unknown>): Promise<Feed> {
  const res = await expectStatus(`${api.origin}/v1/feeds`, 201, {
    method: 'POST',
    headers: { ...api.auth, ...json },
    body: JSON.stringify({ budget: { requestsPerSecond: REQUESTS_PER_SECOND }, pageSize: PAGE_SIZE, ...body }),
  });
  return JSON.parse(res.text) as Feed;
}

async function startRun(api: Api, feedId: string): Promise<Job> {
  const res = await expectStatus(`${api.origin}/v1/feeds/${feedId}/runs`, 202, { method: 'POST', headers: api.auth });
  return JSON.parse(res.text) as Job;
}

/** Waits as long as a page takes: the reader answers nothing while it applies one. */
async function readJob(api: Api, jobId: string): Promise<Job> {
  const res = await fetch(`${api.origin}/v1/jobs/${jobId}`, {
    headers: api.auth,
    signal: AbortSignal.timeout(120_000),
  });
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${jobId} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Job;
}

/**
 * Polls the run every 100 ms until it ends, sampling the server's RSS at each poll; `during` is called with the run
 * as it goes (the kill measurement stops the server from there). Wall time from the POST to the end seen.
 */
async function followRun(
  api: Api,
  server: ServerHandle,
  jobId: string,
  startedAt: number,
  during?: (job: Job) => Promise<boolean>,
): Promise<{ job: Job; seconds: number; peakRssMb: number; pollMs: number[] }> {
  let peak = 0;
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  // How long each poll took: how the product answers other requests while a run writes.
  const pollMs: number[] = [];
  for (;;) {
    const polledAt = performance.now();
    const job = await readJob(api, jobId);
    pollMs.push(performance.now() - polledAt);
    peak = Math.max(peak, rssOf(server.pid));
    const seconds = (performance.now() - startedAt) / 1000;
    if (FINAL.includes(job.state)) return { job, seconds, peakRssMb: mb(peak), pollMs };
    if (during && (await during(job))) return { job, seconds, peakRssMb: 0, pollMs };
    if (Date.now() > deadline) throw new Error(`run ${jobId} still ${job.state} after ${RUN_TIMEOUT_MS / 1000} s`);
    await sleep(100);
  }
}

/** The process's resident set from /proc (Linux), not over IPC: the sample does not wait for the server. */
function rssOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function runToEnd(api: Api, server: ServerHandle, feedId: string) {
  const started = performance.now();
  const run = await startRun(api, feedId);
  return followRun(api, server, run.id, started);
}

const ledgerNote = (l: FeedLedger) =>
  `fetched ${l.fetched}, created ${l.created}, updated ${l.updated}, unchanged ${l.unchanged}, failed ${l.failed}, entity events ${l.entityEvents ?? 'none'}, requests ${l.requests}, run ${round((l.durationMs ?? 0) / 1000)} s`;

/** Changes the price of `count` of the source's generated listings (ids `lst_bench…`), through 100-item bulk jobs. */
async function changeAtSource(api: Api, total: number, count: number): Promise<void> {
  const step = Math.max(1, Math.floor(total / count));
  const ids = Array.from({ length: count }, (_, k) => `lst_bench${(k * step).toString(36).padStart(8, '0')}`);
  const jobs: string[] = [];
  for (let i = 0; i < ids.length; i += BULK_ITEMS) {
    const listings = ids.slice(i, i + BULK_ITEMS).map((id, k) => ({ id, pricing: { listPrice: 777_000 + i + k } }));
    const res = await expectStatus(`${api.origin}/v1/listings/bulk`, 202, {
      method: 'POST',
      headers: { ...api.auth, ...json },
      body: JSON.stringify({ listings }),
    });
    jobs.push((JSON.parse(res.text) as { jobId: string }).jobId);
  }
  for (const jobId of jobs)
    for (;;) {
      const job = await readJob(api, jobId);
      if (FINAL.includes(job.state)) {
        if (job.state !== 'succeeded') throw new Error(`the change at the source ended ${job.state}`);
        break;
      }
      await sleep(100);
    }
}

/** A local RESO source of `count` records with 5 photos each (tiny distinct JPEGs served by the source). */
async function photoSource(count: number): Promise<ResoTestSource> {
  const source = await new ResoTestSource().start();
  const photos = await Promise.all(
    Array.from({ length: PHOTOS_PER_LISTING }, (_, i) =>
      sharp({ create: { width: 32, height: 24, channels: 3, background: { r: 40 * i, g: 120, b: 200 - 30 * i } } })
        .jpeg()
        .toBuffer(),
    ),
  );
  const photoTime = '2026-01-01T00:00:00.000Z';
  for (let n = 0; n < count; n++) {
    const media = photos.map((bytes, i) => {
      const name = `${n}-${i}.jpg`;
      source.photos.set(name, bytes);
      return {
        MediaKey: `${n}-${i}`,
        MediaURL: `${source.photoBase}/${name}`,
        Order: i,
        PreferredPhotoYN: i === 0,
        MediaCategory: 'Photo',
        MediaModificationTimestamp: photoTime,
      };
    });
    source.put(photoRecord(n, 300_000 + n, new Date(Date.UTC(2026, 0, 1) + n * 1000), photoTime, media));
  }
  return source;
}

const photoRecord = (n: number, price: number, modified: Date, photosAt: string, media: unknown[]): SourceRecord => ({
  ListingKey: `PH${String(n).padStart(6, '0')}`,
  ModificationTimestamp: modified.toISOString(),
  StandardStatus: 'Active',
  PropertyType: 'Residential',
  ListPrice: price,
  UnparsedAddress: `${n} Elm St`,
  City: 'Austin',
  StateOrProvince: 'TX',
  PostalCode: '78701',
  PhotosChangeTimestamp: photosAt,
  Media: media,
});

async function listingsOf(api: Api, source: string): Promise<number> {
  const res = await expectStatus(`${api.origin}/v1/listings?source=${encodeURIComponent(source)}&limit=1`, 200, {
    headers: api.auth,
  });
  return (JSON.parse(res.text) as { total: number }).total;
}

export const feeds: Scenario = {
  name: 'feeds',
  description:
    'Feed sync (embedded): a first sync of 100,000 listings from a second embedded instance (BENCH_FEEDS_LISTINGS), an incremental run after 1% changed at the source, 10,000 listings with 5 photos each synced twice (BENCH_FEEDS_PHOTO_LISTINGS), and a run whose process is killed and restarted',

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const ratios: Ratio[] = [];
    const problems: string[] = [];
    const size = sizes(ctx.settings.mode);
    const key = (label: string) => `bench_${label}_${randomBytes(24).toString('base64url')}`;
    const embedded = (dataDir: string, adminApiKey: string): EmbeddedSpec => ({
      kind: 'embedded',
      dataDir,
      adminApiKey,
      rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      logLevel: 'warn',
      feeds: { allowPrivateSources: true },
    });

    // Instance A, the source: the generated listings written straight into its data folder, served at /reso/odata.
    const sourceKey = key('source');
    const sourceSpec = embedded(await ctx.tempDir('feeds-source'), sourceKey);
    ctx.log(`source: writing ${size.listings.toLocaleString('en-US')} listings into a data folder`);
    await (
      await ctx.servers.start(
        'feeds source seed',
        { ...sourceSpec, seedListings: size.listings },
        {
          startTimeoutMs: SEED_TIMEOUT_MS,
        },
      )
    ).stop();
    const sourceServer = await ctx.servers.start('feeds source', sourceSpec);
    const a: Api = { origin: sourceServer.origin, auth: { authorization: `Bearer ${sourceKey}` } };
    const reso = `${sourceServer.origin}/reso/odata`;

    // Instance B, the reader.
    const readerKey = key('reader');
    const readerSpec = embedded(await ctx.tempDir('feeds-reader'), readerKey);
    let reader = await ctx.servers.start('feeds reader', readerSpec);
    const b = (): Api => ({ origin: reader.origin, auth: { authorization: `Bearer ${readerKey}` } });
    try {
      const rssBefore = mb(rssOf(reader.pid));
      const feed = await createFeed(b(), {
        name: 'bench source',
        serviceRoot: reso,
        auth: { type: 'bearer', token: sourceKey },
        originatingSystemName: 'bench-source',
      });

      // (a) The first sync.
      const first = await runToEnd(b(), reader, feed.id);
      const l1 = first.job.ledger!;
      ctx.log(`first sync: ${round(first.seconds)} s, peak RSS ${first.peakRssMb} MB; ${ledgerNote(l1)}`);
      if (first.job.state !== 'succeeded' || l1.created !== size.listings)
        problems.push(`feeds first sync ended ${first.job.state}: ${ledgerNote(l1)}; ${l1.stopReason ?? ''}`);
      ratios.push(
        {
          name: `first sync of ${size.listings.toLocaleString('en-US')} listings, s`,
          value: round(first.seconds),
          ...(size.listings === 100_000
            ? {
                goal: { max: FIRST_SYNC_GOAL_SEC },
                verdict: first.seconds <= FIRST_SYNC_GOAL_SEC ? ('PASS' as const) : ('BELOW TARGET' as const),
              }
            : {}),
          note: `${Math.round(size.listings / first.seconds)} records/s from POST to the end seen; ${ledgerNote(l1)}`,
        },
        {
          name: 'first sync: GET /v1/jobs/:id while it runs, p99 ms',
          value: round(percentile(first.pollMs, 99), 1),
          note: `${first.pollMs.length} polls, one every ~100 ms; median ${round(percentile(first.pollMs, 50), 1)} ms, max ${round(Math.max(...first.pollMs), 1)} ms`,
        },
        {
          name: 'first sync: reader RSS peak, MB',
          value: first.peakRssMb,
          goal: { max: FIRST_SYNC_RSS_GOAL_MB },
          verdict: first.peakRssMb <= FIRST_SYNC_RSS_GOAL_MB ? 'PASS' : 'BELOW TARGET',
          note: `before the run ${rssBefore} MB; sampled every ~100 ms`,
        },
      );

      // (b) 1% changed at the source, then the next run.
      const changed = Math.max(1, Math.round((size.listings * size.changedPercent) / 100));
      await changeAtSource(a, size.listings, changed);
      const second = await runToEnd(b(), reader, feed.id);
      const l2 = second.job.ledger!;
      ctx.log(`incremental run: ${round(second.seconds)} s; ${ledgerNote(l2)}`);
      if (l2.updated !== changed || l2.created !== 0)
        problems.push(`feeds incremental run wrote other than the ${changed} changed: ${ledgerNote(l2)}`);
      ratios.push({
        name: `incremental run, ${size.changedPercent}% (${changed.toLocaleString('en-US')}) changed, s`,
        value: round(second.seconds, 2),
        goal: { max: INCREMENTAL_GOAL_SEC },
        verdict: second.seconds <= INCREMENTAL_GOAL_SEC ? 'PASS' : 'BELOW TARGET',
        note: `written (updated) ${l2.updated}, unchanged ${l2.unchanged} (the overlap window re-reads), ${ledgerNote(l2)}`,
      });

      // A profile is written when its process exits: the reader of (a)-(c) exits cleanly, and (d) kills another.
      if (ctx.servers.profiling) {
        await reader.stop();
        reader = await ctx.servers.start('feeds reader (to be killed)', readerSpec);
      }

      // (d) A run whose process is killed part-way and restarted on its data folder: a feed of the source's
      // Austin listings (about a tenth), each record applied once, the cursor at the last record at the end.
      const crashFeed = await createFeed(b(), {
        name: 'bench crash',
        serviceRoot: reso,
        auth: { type: 'bearer', token: sourceKey },
        originatingSystemName: 'bench-crash',
        filter: "City eq 'Austin'",
        pageSize: 100,
      });
      // About a third of the way through the Austin tenth of the source.
      const killAfter = Math.max(100, Math.round(size.listings * 0.03));
      const crashStarted = performance.now();
      const crashRun = await startRun(b(), crashFeed.id);
      let killedAt = 0;
      await followRun(b(), reader, crashRun.id, crashStarted, async (job) => {
        if (job.progress.processed < killAfter) return false;
        killedAt = job.progress.processed;
        process.kill(reader.pid, 'SIGKILL');
        return true;
      });
      await reader.stop();
      const restarted = performance.now();
      reader = await ctx.servers.start('feeds reader (restarted)', readerSpec);
      const resumed = await followRun(b(), reader, crashRun.id, restarted);
      const l4 = resumed.job.ledger!;
      const austin = await listingsOf(b(), 'bench-crash');
      const crashCursor = (await readJob(b(), crashRun.id)).ledger?.cursorAfter;
      const feedAfter = JSON.parse(
        (await expectStatus(`${reader.origin}/v1/feeds/${crashFeed.id}`, 200, { headers: b().auth })).text,
      ) as Feed;
      if (killedAt === 0) problems.push('feeds kill/restart: the run ended before the process was killed');
      const once = resumed.job.state === 'succeeded' && l4.created === austin && l4.updated + l4.unchanged === 0;
      const cursorAtEnd = JSON.stringify(feedAfter.cursor) === JSON.stringify(crashCursor);
      ctx.log(
        `killed at ${killedAt} records; resumed to ${resumed.job.state} in ${round(resumed.seconds)} s after the restart; ${ledgerNote(l4)}; listings ${austin}`,
      );
      if (!once || !cursorAtEnd)
        problems.push(
          `feeds kill/restart: ${ledgerNote(l4)}, listings ${austin}, feed cursor ${JSON.stringify(feedAfter.cursor)} vs run ${JSON.stringify(crashCursor)}`,
        );
      ratios.push({
        name: 'killed mid-run and restarted: records applied twice',
        value: l4.updated + l4.unchanged + Math.max(0, l4.fetched - l4.created - l4.failed),
        goal: { max: 0 },
        verdict: once && cursorAtEnd ? 'PASS' : 'BELOW TARGET',
        note: `SIGKILL at ${killedAt} of ${austin} records (pages of 100), restarted: ${ledgerNote(l4)}; ${austin} listings; feed cursor ${cursorAtEnd ? 'equals' : 'differs from'} the run's last position`,
      });
    } finally {
      await reader.stop();
      await sourceServer.stop();
    }

    // (c) Photos: a local RESO test source (records held in memory, photos served by it), a fresh reader.
    const photos = await photoSource(size.photoListings);
    const photoKey = key('photos');
    const photoReader = await ctx.servers.start(
      'feeds photo reader',
      embedded(await ctx.tempDir('feeds-photos'), photoKey),
    );
    try {
      const api: Api = { origin: photoReader.origin, auth: { authorization: `Bearer ${photoKey}` } };
      const feed = await createFeed(api, {
        name: 'bench photos',
        serviceRoot: photos.url,
        auth: { type: 'bearer', token: 'source-token' },
        originatingSystemName: 'bench-photos',
        media: true,
        pageSize: 200,
      });
      const first = await runToEnd(api, photoReader, feed.id);
      const downloadsFirst = photos.downloads.length;
      // Every record changes (its price, so its ModificationTimestamp) and none of its photos does.
      for (const [k, r] of photos.records)
        photos.records.set(k, {
          ...r,
          ListPrice: Number(r.ListPrice) + 1,
          ModificationTimestamp: new Date(Date.parse(r.ModificationTimestamp) + 86_400_000).toISOString(),
        });
      const second = await runToEnd(api, photoReader, feed.id);
      const downloadsSecond = photos.downloads.length - downloadsFirst;
      const p1 = first.job.ledger!;
      const p2 = second.job.ledger!;
      const note = (l: FeedLedger) =>
        `downloaded ${l.mediaDownloaded}, unchanged ${l.mediaUnchanged}, uploaded ${l.mediaUploaded}, failed ${l.mediaFailed}`;
      ctx.log(
        `photos: first run ${round(first.seconds)} s (${note(p1)}; source saw ${downloadsFirst}), second ${round(second.seconds)} s (${note(p2)}; source saw ${downloadsSecond})`,
      );
      if (p1.mediaDownloaded !== size.photoListings * PHOTOS_PER_LISTING || p2.updated !== size.photoListings)
        problems.push(`feeds photos: first ${ledgerNote(p1)}, ${note(p1)}; second ${ledgerNote(p2)}, ${note(p2)}`);
      ratios.push(
        {
          name: `photos: first run, ${size.photoListings.toLocaleString('en-US')} listings x ${PHOTOS_PER_LISTING}, downloads`,
          value: downloadsFirst,
          note: `${round(first.seconds)} s; ${note(p1)}; ${ledgerNote(p1)}`,
        },
        {
          name: 'photos: second run (every record changed, no photo), downloads',
          value: downloadsSecond,
          goal: { max: 0 },
          verdict: downloadsSecond === 0 && p2.mediaDownloaded === 0 ? 'PASS' : 'BELOW TARGET',
          note: `${round(second.seconds)} s; ${note(p2)}; ${ledgerNote(p2)}; counted at the source`,
        },
      );
    } finally {
      await photoReader.stop();
      await photos.close();
    }
    return { name: 'feeds', description: feeds.description, targets: [], ratios, problems };
  },
};
