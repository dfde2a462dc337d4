import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { MAX_IMAGE_BYTES } from '@estate/contracts/media';
import { listingBody } from '@estate/testing';
import sharp from 'sharp';
import { expectStatus } from '../lib/http';
import type { Ratio, Scenario, ScenarioContext, ScenarioResult } from '../lib/scenario';
import type { ServerHandle } from '../lib/servers';

/** The aim: the service's time per image at most 20% above sharp's own. */
const MAX_OVERHEAD_RATIO = 1.2;
/** The aim for the server's peak RSS while 10 uploads of ~10 MB arrive at once. */
const MAX_PEAK_RSS_MB = 512;
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** 12 megapixels, 4:3, as a phone camera takes them. */
const WIDTH = 4000;
const HEIGHT = 3000;
const POLL_MS = 20;
const READY_TIMEOUT_MS = 120_000;

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (bytes: number): number => round(bytes / 1024 / 1024, 0);

/** A 12-megapixel JPEG of noise (compresses like a detailed photo); `quality` sets its size. */
async function photo(seed: number, quality: number): Promise<Buffer> {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
  let x = seed;
  for (let i = 0; i < raw.length; i += 3) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    // Smooth gradients plus noise: detail that a real photo has, at a realistic file size.
    raw[i] = ((i / 3) % WIDTH) / 16 + ((x >> 8) & 0x3f);
    raw[i + 1] = Math.floor(i / 3 / WIDTH) / 12 + ((x >> 14) & 0x3f);
    raw[i + 2] = (x >> 20) & 0xff;
  }
  return sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

/**
 * The product's renditions made by sharp directly: the media service's own `renderImage` (its
 * rendition set, sizes, formats and qualities, its sharp pipelines) on the file in memory, each file
 * read into memory as sharp encodes it. Nothing around it: no HTTP, blob store, database or queue.
 */
async function renderDirect(file: Buffer): Promise<void> {
  // Loaded here, like the product in the servers' children: the parent imports it only for this.
  const { renderImage, DEFAULT_MAX_PIXELS, DEFAULT_RENDER_TIMEOUT_SECONDS } = await import('@estate/media');
  await renderImage(
    file,
    'image/jpeg',
    { maxPixels: DEFAULT_MAX_PIXELS, timeoutSeconds: DEFAULT_RENDER_TIMEOUT_SECONDS },
    async (out) => {
      for await (const chunk of out.data) void chunk;
    },
  );
}

interface Api {
  origin: string;
  auth: Record<string, string>;
}

async function upload(api: Api, listingId: string, file: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([file], { type: 'image/jpeg' }), 'photo.jpg');
  const res = await fetch(`${api.origin}/v1/listings/${listingId}/media`, {
    method: 'POST',
    headers: api.auth,
    body: form,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { items: { id: string }[] }).items[0].id;
}

/** Resolves once every listed image is ready (fails on `failed`). */
async function ready(api: Api, listingId: string, ids: string[]): Promise<void> {
  const started = Date.now();
  for (;;) {
    const res = await fetch(`${api.origin}/v1/listings/${listingId}/media?limit=100`, { headers: api.auth });
    const items = (
      (await res.json()) as { items: { id: string; status: string; failureReason: string | null }[] }
    ).items.filter((m) => ids.includes(m.id));
    const failed = items.find((m) => m.status === 'failed');
    if (failed) throw new Error(`image ${failed.id} failed: ${failed.failureReason}`);
    if (items.length === ids.length && items.every((m) => m.status === 'ready')) return;
    if (Date.now() - started > READY_TIMEOUT_MS) throw new Error(`images not ready after ${READY_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function newListing(api: Api): Promise<string> {
  const created = await expectStatus(`${api.origin}/v1/listings`, 201, {
    method: 'POST',
    headers: { ...api.auth, 'content-type': 'application/json' },
    body: JSON.stringify(listingBody()),
  });
  return (JSON.parse(created.text) as { id: string }).id;
}

/** Samples the server's RSS every few milliseconds while `work` runs; the highest reading. */
async function peakRss(
  server: ServerHandle,
  work: () => Promise<void>,
): Promise<{ before: number; peak: number; after: number }> {
  const before = (await server.sample()).rssBytes;
  let peak = before;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, (await server.sample()).rssBytes);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    await work();
  } finally {
    running = false;
    await sampler;
  }
  return { before, peak, after: (await server.sample()).rssBytes };
}

export const media: Scenario = {
  name: 'media',
  description:
    'Photo uploads of 12-megapixel JPEGs through the gateway (embedded profile: multipart, blob store, SQLite, in-process job queue, sharp renditions), ' +
    "against the same renditions made by sharp directly in the bench process; and the server's peak RSS under 10 concurrent 10 MB uploads",

  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const quick = ctx.settings.mode === 'quick';
    const sequential = quick ? 3 : 8;
    const batch = quick ? 4 : 12;
    const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;

    ctx.log('media: making 12-megapixel test photos');
    const photos = await Promise.all([1, 2, 3, 4].map((seed) => photo(seed, 85)));
    // The largest quality whose file still fits under the 10 MB limit.
    let heavy: Buffer = Buffer.alloc(0);
    for (const quality of [98, 96, 94, 92, 90, 85]) {
      heavy = await photo(99, quality);
      if (heavy.length <= MAX_IMAGE_BYTES) break;
    }
    ctx.log(
      `media: photos of ${photos.map((p) => mb(p.length)).join(', ')} MB and one of ${round(heavy.length / 1024 / 1024)} MB`,
    );

    // Baseline: the same renditions by sharp in this process, one at a time with as many libvips
    // threads as the embedded product's single worker uses, and its operation cache off as there.
    sharp.concurrency(availableParallelism());
    sharp.cache(false);
    const directCpuMs: number[] = [];
    const direct = async (file: Buffer): Promise<number> => {
      const cpu = process.cpuUsage();
      const t = performance.now();
      await renderDirect(file);
      const ms = performance.now() - t;
      const used = process.cpuUsage(cpu);
      directCpuMs.push((used.user + used.system) / 1000);
      return ms;
    };
    const directBatch = async (): Promise<number> => {
      const t = performance.now();
      for (let i = 0; i < batch; i++) await renderDirect(photos[i % photos.length]);
      return batch / ((performance.now() - t) / 1000);
    };

    ctx.log('media: starting the embedded product');
    const server = await ctx.servers.start('gateway', {
      kind: 'embedded',
      dataDir: await ctx.tempDir('media'),
      adminApiKey,
      rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
      logLevel: 'warn',
    });
    const api: Api = { origin: server.origin, auth: { authorization: `Bearer ${adminApiKey}` } };

    const warm = await newListing(api);
    await direct(photos[0]);
    await ready(api, warm, [await upload(api, warm, photos[0])]);

    // Interleaved, image by image, so both sides meet the same load from whatever else runs on the machine.
    ctx.log(`media: ${sequential} images, each rendered by sharp directly, then uploaded and awaited until ready`);
    const directMs: number[] = [];
    const serviceMs: number[] = [];
    const serviceCpuMs: number[] = [];
    const cpuMs = (sample: { cpuUserMicros: number; cpuSystemMicros: number }) =>
      (sample.cpuUserMicros + sample.cpuSystemMicros) / 1000;
    const listing = await newListing(api);
    directCpuMs.length = 0;
    for (let i = 0; i < sequential; i++) {
      const file = photos[i % photos.length];
      directMs.push(await direct(file));
      const before = await server.sample();
      const t = performance.now();
      await ready(api, listing, [await upload(api, listing, file)]);
      serviceMs.push(performance.now() - t);
      serviceCpuMs.push(cpuMs(await server.sample()) - cpuMs(before));
    }

    ctx.log(`media: ${batch} uploads at once, between two runs of sharp directly`);
    const directBefore = await directBatch();
    const many = await newListing(api);
    const batchStart = performance.now();
    const ids = await Promise.all(
      Array.from({ length: batch }, (_, i) => upload(api, many, photos[i % photos.length])),
    );
    await ready(api, many, ids);
    const servicePerSec = batch / ((performance.now() - batchStart) / 1000);
    const directPerSec = (directBefore + (await directBatch())) / 2;

    ctx.log("media: 10 concurrent uploads of a 10 MB photo, sampling the server's memory");
    const memListing = await newListing(api);
    const rss = await peakRss(server, async () => {
      const memIds = await Promise.all(Array.from({ length: 10 }, () => upload(api, memListing, heavy)));
      await ready(api, memListing, memIds);
    });

    // Per image, then the median: each pair ran back to back, under the same load.
    const overhead = median(serviceMs.map((ms, i) => ms / directMs[i]));
    const ratios: Ratio[] = [
      {
        name: 'upload-to-ready median ms (through the gateway, one at a time)',
        value: round(median(serviceMs)),
        note: `${sequential} uploads; each waits for the previous one to be ready`,
      },
      {
        name: 'sharp direct median ms (same renditions)',
        value: round(median(directMs)),
        note: "the media service's renderImage in the bench process: same renditions, sizes, formats, qualities",
      },
      {
        name: 'overhead: upload-to-ready / sharp direct (median of per-image ratios)',
        value: round(overhead, 3),
        goal: { max: MAX_OVERHEAD_RATIO },
        verdict: overhead <= MAX_OVERHEAD_RATIO ? 'PASS' : 'BELOW TARGET',
        note: 'includes the HTTP upload, blob writes, store writes, the job hop and the client polling every 20 ms',
      },
      {
        name: 'server CPU ms per image / sharp direct CPU ms (medians)',
        value: round(median(serviceCpuMs) / median(directCpuMs), 3),
        note: `${round(median(serviceCpuMs))} / ${round(median(directCpuMs))} ms of CPU, every thread; the server's includes answering the polls; less sensitive to the machine's other load than time`,
      },
      {
        name: `images/s through the gateway (${batch} at once)`,
        value: round(servicePerSec, 2),
        note: 'until the last is ready',
      },
      {
        name: 'images/s sharp direct (one at a time)',
        value: round(directPerSec, 2),
        note: 'mean of a run before and one after; the in-process queue renders one image at a time too',
      },
      {
        name: 'throughput: gateway / sharp direct',
        value: round(servicePerSec / directPerSec, 3),
        note: 'higher is better',
      },
      { name: 'server RSS MB before 10 × 10 MB uploads', value: mb(rss.before), note: 'after the other steps' },
      {
        name: 'server peak RSS MB during 10 × 10 MB uploads',
        value: mb(rss.peak),
        goal: { max: MAX_PEAK_RSS_MB },
        verdict: mb(rss.peak) <= MAX_PEAK_RSS_MB ? 'PASS' : 'BELOW TARGET',
        note: `sampled every ~10 ms until all were ready; file ${round(heavy.length / 1024 / 1024)} MB`,
      },
      { name: 'server RSS MB after', value: mb(rss.after), note: '' },
    ];
    const problems =
      server.logLines() > 0 ? [`media/gateway: the server printed ${server.logLines()} log lines (see stderr)`] : [];
    return { name: this.name, description: this.description, targets: [], ratios, problems };
  },
};
