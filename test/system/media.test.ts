import { randomBytes } from 'node:crypto';
import { signIdentity } from '@estate/platform/auth';
import { describeWithEngines, listingBody } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import mongoose from 'mongoose';
import sharp from 'sharp';
import { buildDist, dropSearchIndex, eventually, freePort, searchEnv, startService, stopAll, waitReady, type RunningService } from './processes';

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
      .withExif({ IFD0: { Make: 'SysCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '30/1 16/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '97/1 44/1 0/1' } })
      .withMetadata({ orientation: 6 });
  }
  return img.toBuffer();
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
 * Tier 3 for media: the services as separate processes on the real engines (MongoDB/GridFS,
 * NATS), uploads through the gateway, renditions by the media workers, the summary on the
 * listing through the listings service, and a second media replica racing the first for the
 * 50-image limit.
 */
describeWithEngines('media across processes (gateway, listings, two media replicas, real engines)', ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'], (urls) => {
  const run = randomBytes(4).toString('hex');
  const platform = `ek_system_platform_${randomBytes(16).toString('hex')}`;
  const admin = `ek_system_admin_${randomBytes(16).toString('hex')}`;
  const secret = randomBytes(32).toString('hex');
  const services: RunningService[] = [];
  const databases = ['gateway', 'listings', 'media', 'leads'].map((s) => `sysm_${run}_${s}`);
  let gateway = '';
  let mediaReplica = '';
  let key = '';
  let accountId = '';
  // Streams and durable consumers of this run's own: suites running beside it on the same server
  // have media processes too, which would otherwise take this run's listing events and jobs.
  const namespace = `sysmedia_${run}`;

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gateway}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  /** Straight to the second media replica, signed as the gateway would sign. */
  const direct = async (path: string, body: FormData) => {
    const who = { accountId, keyId: 'key_system', role: 'admin' as const, agentId: null };
    const res = await fetch(`${mediaReplica}${path}`, { method: 'POST', headers: signIdentity(who, secret, 'POST', path), body });
    return { status: res.status, body: (await res.json()) as { code?: string } };
  };
  /** Polls `read` until `ok` holds for what it returns (workers and projections catch up a moment later). */
  const until = <T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> =>
    eventually(async () => {
      const v = await read();
      if (!ok(v)) throw new Error(`not yet: ${JSON.stringify(v).slice(0, 300)}`);
      return v;
    }, timeoutMs);
  const mediaOf = async (listingId: string): Promise<MediaBody[]> => (await api('GET', `/v1/listings/${listingId}/media?limit=100`)).body.items;

  beforeAll(async () => {
    buildDist();
    const ports = { gateway: await freePort(), listings: await freePort(), media: await freePort(), media2: await freePort(), leads: await freePort() };
    const common = { MONGODB_URL: urls.MONGODB_URL, NATS_URL: urls.NATS_URL, NATS_NAMESPACE: namespace, INTERNAL_SIGNING_SECRET: secret, LOG_LEVEL: 'info', ...searchEnv(urls.ELASTICSEARCH_URL, `m${run}`) };
    services.push(startService('listings', { ...common, PORT: String(ports.listings), MONGODB_DATABASE: `sysm_${run}_listings` }));
    services.push(startService('leads', { ...common, PORT: String(ports.leads), MONGODB_DATABASE: `sysm_${run}_leads` }));
    for (const port of [ports.media, ports.media2]) services.push(startService('media', { ...common, PORT: String(port), MONGODB_DATABASE: `sysm_${run}_media` }));
    services.push(
      startService('gateway', {
        ...common,
        PORT: String(ports.gateway),
        MONGODB_DATABASE: `sysm_${run}_gateway`,
        LISTINGS_URL: `http://127.0.0.1:${ports.listings}`,
        MEDIA_URL: `http://127.0.0.1:${ports.media}`,
        LEADS_URL: `http://127.0.0.1:${ports.leads}`,
        ADMIN_API_KEY: admin,
        PLATFORM_API_KEY: platform,
      }),
    );
    gateway = `http://127.0.0.1:${ports.gateway}`;
    mediaReplica = `http://127.0.0.1:${ports.media2}`;
    await waitReady(gateway, services, 60_000);
    await waitReady(mediaReplica, services, 30_000);
    // An account of its own, so the test knows its id (the second replica is called with a signed identity).
    const res = await fetch(`${gateway}/v1/accounts`, { method: 'POST', headers: { authorization: `Bearer ${platform}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `Media ${run}` }) });
    const created = (await res.json()) as { account: { id: string }; adminKey: { secret: string } };
    accountId = created.account.id;
    key = created.adminKey.secret;
  }, 120_000);

  afterAll(async () => {
    await stopAll(services);
    await dropSearchIndex(urls.ELASTICSEARCH_URL, `m${run}`);
    const nc = await connect({ servers: urls.NATS_URL, name: 'sys-media-cleanup' });
    try {
      const jsm = await jetstreamManager(nc);
      for await (const st of jsm.streams.list()) if (st.config.name.startsWith(`${namespace}_`)) await jsm.streams.delete(st.config.name);
    } finally {
      await nc.close();
    }
    const conn = await mongoose.createConnection(urls.MONGODB_URL).asPromise();
    try {
      for (const db of databases) await conn.useDb(db).dropDatabase();
    } finally {
      await conn.close();
    }
  }, 60_000);

  it('uploads through the gateway, renders in the worker, serves files without a key, and shows the summary on the listing', async () => {
    const listing = (await api('POST', '/v1/listings', listingBody())).body;
    const up = await api('POST', `/v1/listings/${listing.id}/media`, form([await jpeg(1200, 900, true), await jpeg(800, 600)], ['Street view']));
    expect(up.status).toBe(201);
    expect(up.body.items.map((m: MediaBody) => [m.status, m.isPrimary, m.width, m.height])).toEqual([['processing', true, 900, 1200], ['processing', false, 800, 600]]);
    const ready = await until(() => mediaOf(listing.id), (items) => items.every((m) => m.status === 'ready'));

    const thumb = await fetch(`${gateway}${ready[0].urls.thumb}?format=webp`);
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/webp');
    expect(thumb.headers.get('cache-control')).toContain('immutable');
    const bytes = Buffer.from(await thumb.arrayBuffer());
    const meta = await sharp(bytes).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 240, height: 320 });
    expect(meta.exif).toBeUndefined();
    const cached = await fetch(`${gateway}${ready[0].urls.thumb}?format=webp`, { headers: { 'if-none-match': thumb.headers.get('etag')! } });
    expect(cached.status).toBe(304);

    const shown = await until(() => api('GET', `/v1/listings/${listing.id}`), (r) => r.body.media.photoCount === 2);
    expect(shown.body.media.primaryPhoto).toEqual({ id: ready[0].id, urls: ready[0].urls, caption: 'Street view' });

    const tour = await api('POST', `/v1/listings/${listing.id}/media`, { type: 'virtual_tour', url: 'http://insecure.example.com/tour' });
    expect(tour.status).toBe(422);
  });

  it('refuses through the gateway: 11 MB is 413, a GIF is 415, corrupt bytes 422, a bomb 422; nothing is stored', async () => {
    const listing = (await api('POST', '/v1/listings', listingBody())).body;
    const big = await api('POST', `/v1/listings/${listing.id}/media`, form([Buffer.concat([await jpeg(40, 30), randomBytes(11 * 1024 * 1024)])]));
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
    const gif = await api('POST', `/v1/listings/${listing.id}/media`, form([Buffer.concat([Buffer.from('GIF89a'), randomBytes(500)])]));
    expect(gif.status).toBe(415);
    const corrupt = await api('POST', `/v1/listings/${listing.id}/media`, form([Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(3000, 9)])]));
    expect(corrupt.body.code).toBe('image_corrupt');
    const small = Buffer.from(await sharp({ create: { width: 8, height: 8, channels: 3, background: '#777' } }).jpeg({ mozjpeg: false }).toBuffer());
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
    const [item] = await until(() => mediaOf(listing.id), (items) => items[0]?.status === 'ready');
    expect((await fetch(`${gateway}${item.urls.large}`)).status).toBe(200);
    expect((await api('DELETE', `/v1/listings/${listing.id}`)).status).toBe(200);
    // The cascade runs when the media service gets the listing's deleted event.
    const statuses = () => Promise.all(Object.values(item.urls).map(async (url) => (await fetch(`${gateway}${url}`)).status));
    expect(await until(statuses, (all) => all.every((s) => s === 404))).toEqual([404, 404, 404]);
    expect((await api('GET', `/v1/listings/${listing.id}/media`)).status).toBe(404);
  });

  it('holds the 50-image limit when two media replicas race for the last slots', async () => {
    const listing = (await api('POST', '/v1/listings', listingBody())).body;
    const tiny = await jpeg(24, 16);
    expect((await api('POST', `/v1/listings/${listing.id}/media`, form(Array.from({ length: 47 }, () => tiny)))).status).toBe(201);
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
    // Fifty renders and their summaries on a shared CPU and FerretDB take a while.
    await until(() => mediaOf(listing.id), (all) => all.every((m) => m.status === 'ready'), 150_000);
    // The work queue hands each job to one worker of the two replicas: every image rendered once.
    const processed = services.filter((x) => x.name === 'media').flatMap((x) => x.output().split('\n').filter((l) => l.includes('"msg":"image processed"') && l.includes(listing.id)));
    expect(processed).toHaveLength(50);
  }, 240_000);
});
