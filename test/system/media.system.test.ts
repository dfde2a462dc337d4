import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { bodyDigest, signRequest } from '@estate/platform/auth';
import { describeWithEngines, eventually, listingBody } from '@estate/testing';
import sharp from 'sharp';
import { apiClient, startCluster, type Api, type Cluster } from './harness';

interface MediaBody {
  id: string;
  status: string;
  isPrimary: boolean;
  width: number;
  height: number;
  urls: { original: string; large: string; thumb: string };
}

async function jpeg(width: number, height: number, exif = false): Promise<Buffer> {
  let img = sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 40 } } }).jpeg();
  if (exif) {
    img = img
      .withExif({
        IFD0: { Make: 'SysCam' },
        IFD3: {
          GPSLatitudeRef: 'N',
          GPSLatitude: '30/1 16/1 0/1',
          GPSLongitudeRef: 'W',
          GPSLongitude: '97/1 44/1 0/1',
        },
      })
      .withMetadata({ orientation: 6 });
  }
  return img.toBuffer();
}

/** The error-level log lines every process of the cluster has printed so far. */
function errorLines(cluster: Cluster): string[] {
  return cluster.processes.flatMap((p) =>
    p
      .output()
      .split('\n')
      .filter((line) => /"level":"(error|fatal)"/.test(line))
      .map((line) => `${p.name}: ${line.slice(0, 1500)}`),
  );
}

function form(files: Buffer[], captions: string[] = []): FormData {
  const f = new FormData();
  files.forEach((data, i) => {
    f.append('file', new Blob([data], { type: 'image/jpeg' }), `p${i}.jpg`);
    if (captions[i]) f.append('caption', captions[i]);
  });
  return f;
}

/**
 * Waits until `done(measure())`, however long that takes while the measure keeps moving; fails when it has not
 * moved for `stallMs` (or after 10 minutes in all). For background work whose duration depends on the machine.
 */
async function untilStalled(
  measure: () => Promise<number>,
  done: (value: number) => boolean,
  stallMs: number,
): Promise<void> {
  const giveUp = Date.now() + 600_000;
  let last = await measure();
  let movedAt = Date.now();
  while (!done(last)) {
    if (Date.now() - movedAt > stallMs || Date.now() > giveUp)
      throw new Error(`stalled at ${last} for ${Math.round((Date.now() - movedAt) / 1000)} s`);
    await sleep(500);
    const now = await measure();
    if (now !== last) movedAt = Date.now();
    last = now;
  }
}

/**
 * Tier 3 for media: the services as separate processes on the real engines (MongoDB/GridFS,
 * NATS), uploads through the gateway, renditions by the media workers, the summary on the
 * listing through the listings service, and a second media replica racing the first for the
 * 50-image limit.
 */
describeWithEngines(
  'media across processes (gateway, listings, two media replicas, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let api: Api;
    let gateway = '';
    let accountId = '';

    /** Straight to the second media replica, signed as the gateway would sign. */
    const direct = async (path: string, body: FormData) => {
      const who = { accountId, keyId: 'key_system', role: 'admin' as const, agentId: null };
      // Encoded first: the signature covers the body's bytes.
      const encoded = new Request('http://localhost', { method: 'POST', body });
      const bytes = Buffer.from(await encoded.arrayBuffer());
      const res = await fetch(`${cluster.process('media', 1).url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': encoded.headers.get('content-type')!,
          ...signRequest(who, {
            caller: 'gateway',
            secret: cluster.signingSecret,
            method: 'POST',
            url: path,
            digest: bodyDigest(bytes),
          }),
        },
        body: bytes,
      });
      return { status: res.status, body: (await res.json()) as { code?: string } };
    };
    const mediaOf = async (listingId: string): Promise<MediaBody[]> =>
      (await api('GET', `/v1/listings/${listingId}/media?limit=100`)).body.items;
    /** The listing's media once every item is rendered (workers and projections catch up a moment later). */
    const readyMediaOf = (listingId: string, timeoutMs = 30_000) =>
      eventually(
        async () => {
          const items = await mediaOf(listingId);
          expect(items.filter((m) => m.status !== 'ready')).toEqual([]);
          return items;
        },
        { timeoutMs },
      );

    beforeAll(async () => {
      cluster = await startCluster({ name: 'sysmedia', engines: urls, replicas: { media: 2 } });
      gateway = cluster.gateway;
      // An account of its own, so the test knows its id (the second replica is called with a signed identity).
      const created = (
        await apiClient(gateway, cluster.keys.platform)('POST', '/v1/accounts', { name: `Media ${cluster.run}` })
      ).body as {
        account: { id: string };
        adminKey: { secret: string };
      };
      accountId = created.account.id;
      api = apiClient(gateway, created.adminKey.secret);
    }, 120_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('uploads through the gateway, renders in the worker, serves files without a key, and shows the summary on the listing', async () => {
      const listing = (await api('POST', '/v1/listings', listingBody())).body;
      const up = await api(
        'POST',
        `/v1/listings/${listing.id}/media`,
        form([await jpeg(1200, 900, true), await jpeg(800, 600)], ['Street view']),
      );
      expect(up.status).toBe(201);
      expect(up.body.items.map((m: MediaBody) => [m.status, m.isPrimary, m.width, m.height])).toEqual([
        ['processing', true, 900, 1200],
        ['processing', false, 800, 600],
      ]);
      const ready = await readyMediaOf(listing.id);

      const thumb = await fetch(`${gateway}${ready[0].urls.thumb}?format=webp`);
      expect(thumb.status).toBe(200);
      expect(thumb.headers.get('content-type')).toBe('image/webp');
      expect(thumb.headers.get('cache-control')).toContain('immutable');
      const bytes = Buffer.from(await thumb.arrayBuffer());
      const meta = await sharp(bytes).metadata();
      expect(meta).toMatchObject({ format: 'webp', width: 240, height: 320 });
      expect(meta.exif).toBeUndefined();
      const cached = await fetch(`${gateway}${ready[0].urls.thumb}?format=webp`, {
        headers: { 'if-none-match': thumb.headers.get('etag')! },
      });
      expect(cached.status).toBe(304);

      const shown = await eventually(
        async () => {
          const res = await api('GET', `/v1/listings/${listing.id}`);
          expect(res.body.media.photoCount).toBe(2);
          return res;
        },
        { timeoutMs: 30_000 },
      );
      expect(shown.body.media.primaryPhoto).toEqual({ id: ready[0].id, urls: ready[0].urls, caption: 'Street view' });

      const tour = await api('POST', `/v1/listings/${listing.id}/media`, {
        type: 'virtual_tour',
        url: 'http://insecure.example.com/tour',
      });
      expect(tour.status).toBe(422);
    }, 120_000);

    it('refuses through the gateway: 11 MB is 413, a GIF is 415, corrupt bytes 422, a bomb 422; nothing is stored', async () => {
      const listing = (await api('POST', '/v1/listings', listingBody())).body;
      const big = await api(
        'POST',
        `/v1/listings/${listing.id}/media`,
        form([Buffer.concat([await jpeg(40, 30), randomBytes(11 * 1024 * 1024)])]),
      );
      expect(big.status).toBe(413);
      expect(big.body.code).toBe('payload_too_large');
      const gif = await api(
        'POST',
        `/v1/listings/${listing.id}/media`,
        form([Buffer.concat([Buffer.from('GIF89a'), randomBytes(500)])]),
      );
      expect(gif.status).toBe(415);
      const corrupt = await api(
        'POST',
        `/v1/listings/${listing.id}/media`,
        form([Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(3000, 9)])]),
      );
      expect(corrupt.body.code).toBe('image_corrupt');
      const small = Buffer.from(
        await sharp({ create: { width: 8, height: 8, channels: 3, background: '#777' } })
          .jpeg({ mozjpeg: false })
          .toBuffer(),
      );
      const sof = small.findIndex((b, i) => b === 0xff && small[i + 1] === 0xc0);
      small.writeUInt16BE(60_000, sof + 5);
      small.writeUInt16BE(60_000, sof + 7);
      const bomb = await api('POST', `/v1/listings/${listing.id}/media`, form([small]));
      expect(bomb.body.code).toBe('image_too_large');
      expect(await mediaOf(listing.id)).toEqual([]);
      expect((await api('POST', '/v1/listings/lst_unknown/media', form([await jpeg(40, 30)]))).status).toBe(404);
    }, 60_000);

    it('deletes the media and its files when the listing is deleted', async () => {
      const listing = (await api('POST', '/v1/listings', listingBody())).body;
      await api('POST', `/v1/listings/${listing.id}/media`, form([await jpeg(300, 200)]));
      const [item] = await eventually(
        async () => {
          const items = await mediaOf(listing.id);
          expect(items[0]?.status).toBe('ready');
          return items;
        },
        { timeoutMs: 30_000 },
      );
      expect((await fetch(`${gateway}${item.urls.large}`)).status).toBe(200);
      expect((await api('DELETE', `/v1/listings/${listing.id}`)).status).toBe(200);
      // The cascade runs when the media service gets the listing's deleted event.
      const statuses = () =>
        Promise.all(Object.values(item.urls).map(async (url) => (await fetch(`${gateway}${url}`)).status));
      // What the files answered over time (each change once), to explain a failure.
      const seen: string[] = [];
      const gone = await eventually(
        async () => {
          const all = await statuses();
          const line = all.join(',');
          if (seen.at(-1)?.endsWith(line) !== true) seen.push(`${new Date().toISOString()} ${line}`);
          expect({ statuses: all, seen, errors: all.some((s) => s >= 500) ? errorLines(cluster) : [] }).toEqual({
            statuses: [404, 404, 404],
            seen,
            errors: [],
          });
          return all;
        },
        { timeoutMs: 60_000 },
      );
      expect(gone).toEqual([404, 404, 404]);
      expect((await api('GET', `/v1/listings/${listing.id}/media`)).status).toBe(404);
    }, 120_000);

    it('holds the 50-image limit when two media replicas race for the last slots', async () => {
      const listing = (await api('POST', '/v1/listings', listingBody())).body;
      const tiny = await jpeg(24, 16);
      expect(
        (await api('POST', `/v1/listings/${listing.id}/media`, form(Array.from({ length: 47 }, () => tiny)))).status,
      ).toBe(201);
      const path = `/v1/listings/${listing.id}/media`;
      const results = await Promise.all([
        ...Array.from({ length: 3 }, () => api('POST', path, form([tiny]))),
        ...Array.from({ length: 3 }, () => direct(path, form([tiny]))),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 409, 409, 409]);
      expect(results.filter((r) => r.status === 409).every((r) => r.body.code === 'media_limit_reached')).toBe(true);
      const items = await mediaOf(listing.id);
      expect(items).toHaveLength(50);
      expect(items.filter((m) => m.isPrimary)).toHaveLength(1);
      // Fifty renders on a shared, loaded CPU take as long as they take: wait while they progress, and fail only
      // when no image has become ready for a minute (work lost or stuck), not after a fixed time.
      await untilStalled(
        async () => (await mediaOf(listing.id)).filter((m) => m.status === 'ready').length,
        (ready) => ready === 50,
        60_000,
      );
      // The work queue hands each job to one worker of the two replicas: every image marked ready exactly once
      // (a redelivered job finds it done). A worker logs after it marks the image ready, so the last lines may
      // reach us a moment after the last status.
      const done = () =>
        cluster.processes
          .filter((x) => x.name === 'media')
          .flatMap((x) =>
            x
              .output()
              .split('\n')
              .filter((l) => l.includes('"msg":"image processed"') && l.includes(listing.id))
              .map((l) => JSON.parse(l) as { mediaId: string; outcome: string })
              .filter((l) => l.outcome === 'done')
              .map((l) => l.mediaId),
          );
      await eventually(() => expect(done()).toHaveLength(50), { timeoutMs: 30_000 });
      expect(new Set(done())).toEqual(new Set(items.map((m) => m.id)));
    }, 660_000);
  },
);
