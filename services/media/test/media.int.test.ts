import { setTimeout as sleep } from 'node:timers/promises';
import { Readable } from 'node:stream';
import type { MemoryBus } from '@estate/bus/memory.bus';
import type { Media } from '@estate/contracts/media';
import { createHttpApp } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { mediaApp } from '../src/app';
import type { MediaRuntime } from '../src/compose';
import { agent, alice, bob, listingPayload, log, startMedia, type MediaHarness, type Part } from './harness';
import { corruptJpeg, gif, hasGps, jpeg, jpegBomb, png, pngBomb } from './images';

describe('media service over HTTP (embedded adapters, signed identity)', () => {
  let h: MediaHarness;
  let app: FastifyInstance;
  let runtime: MediaRuntime;
  let bus: MemoryBus;
  let changes: MediaHarness['changes'];

  const call: MediaHarness['call'] = (who, opts) => h.call(who, opts);
  const upload: MediaHarness['upload'] = (listingId, parts, who) => h.upload(listingId, parts, who);
  const list: MediaHarness['list'] = (listingId, who) => h.list(listingId, who);
  const newListing: MediaHarness['newListing'] = (accountId) => h.newListing(accountId);
  const settled: MediaHarness['settled'] = (listingId) => h.settled(listingId);
  const fetchFile: MediaHarness['fetchFile'] = (url, headers) => h.fetchFile(url, headers);
  const blobFiles = () => h.blobFiles();

  beforeEach(async () => {
    h = await startMedia();
    ({ app, runtime, bus, changes } = h);
  });
  afterEach(async () => {
    await h.close();
  });

  it('uploads photos with captions: 201 processing, then ready with renditions at public URLs, one media.media.changed per step', async () => {
    const id = await newListing();
    const res = await upload(id, [
      { name: 'file', data: await jpeg(2400, 1200) },
      { name: 'caption', value: 'Front of the house' },
      { name: 'file', data: await png(500, 400), type: 'text/plain', filename: 'garden.txt' },
    ]);
    expect(res.statusCode).toBe(201);
    const { items } = res.json();
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({
      id: expect.stringMatching(/^med_/),
      listingId: id,
      kind: 'image',
      caption: 'Front of the house',
      order: 0,
      isPrimary: true,
      status: 'processing',
      width: 2400,
      height: 1200,
      contentType: 'image/jpeg',
      failureReason: null,
      url: null,
      version: 1,
    });
    expect(items[1]).toMatchObject({
      caption: null,
      order: 1,
      isPrimary: false,
      contentType: 'image/png',
      width: 500,
      height: 400,
    });
    expect(items[0].urls.thumb).toMatch(/^\/files\/[A-Za-z0-9_-]{22}\/thumb$/);

    const done = await settled(id);
    expect(done.map((m) => [m.status, m.version])).toEqual([
      ['ready', 2],
      ['ready', 2],
    ]);
    const large = await fetchFile(done[0].urls!.large);
    expect(large.statusCode).toBe(200);
    expect(large.headers['content-type']).toBe('image/jpeg');
    expect(large.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(large.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await sharp(large.rawPayload).metadata()).toMatchObject({ format: 'jpeg', width: 1600, height: 800 });
    const webp = await fetchFile(`${done[0].urls!.thumb}?format=webp`);
    expect(webp.headers['content-type']).toBe('image/webp');
    expect(await sharp(webp.rawPayload).metadata()).toMatchObject({ format: 'webp', width: 320, height: 160 });
    const original = await fetchFile(done[1].urls!.original);
    expect(await sharp(original.rawPayload).metadata()).toMatchObject({ format: 'png', width: 500, height: 400 });
    // Never upscaled: a 500×400 image's "large" is 500×400.
    expect(await sharp((await fetchFile(done[1].urls!.large)).rawPayload).metadata()).toMatchObject({
      format: 'jpeg',
      width: 500,
      height: 400,
    });

    await runtime.relay.flush();
    expect(changes.map((c) => c.payload.change)).toEqual(['uploaded', 'processed', 'processed']);
    const last = changes[changes.length - 1].payload;
    expect(last).toMatchObject({
      accountId: 'acc_alice',
      listingId: id,
      summary: {
        photoCount: 2,
        primaryPhoto: { id: items[0].id, urls: items[0].urls, caption: 'Front of the house' },
        virtualTours: [],
      },
    });
    expect(changes.map((c) => c.payload.version)).toEqual(
      [...changes.map((c) => c.payload.version)].sort((a, b) => a - b),
    );
  });

  it('applies EXIF orientation, records the displayed size, and strips GPS and all other metadata from what it serves', async () => {
    const id = await newListing();
    const source = await jpeg(400, 300, { orientation: 6, gps: true });
    const meta = await sharp(source).metadata();
    expect(meta).toMatchObject({ width: 400, height: 300, orientation: 6 });
    expect(hasGps(meta.exif)).toBe(true);

    const res = await upload(id, [{ name: 'file', data: source }]);
    expect(res.json().items[0]).toMatchObject({ width: 300, height: 400 });
    const [done] = await settled(id);
    expect(done).toMatchObject({ status: 'ready', width: 300, height: 400 });
    for (const url of [
      done.urls!.original,
      done.urls!.large,
      done.urls!.thumb,
      `${done.urls!.thumb}?format=webp`,
      `${done.urls!.large}?format=webp`,
    ]) {
      const file = (await fetchFile(url)).rawPayload;
      const m = await sharp(file).metadata();
      expect(m.exif).toBeUndefined();
      expect(m.xmp).toBeUndefined();
      expect(m.orientation).toBeUndefined();
      expect(hasGps(m.exif)).toBe(false);
      expect(file.includes(Buffer.from('TestCam'))).toBe(false);
    }
    const thumb = await sharp((await fetchFile(done.urls!.thumb)).rawPayload)
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect(thumb.info).toMatchObject({ width: 240, height: 320 });
    // Orientation 6 turns the image a quarter clockwise: the left half (red) ends up on top.
    const at = (x: number, y: number) =>
      thumb.data.subarray((y * thumb.info.width + x) * 3, (y * thumb.info.width + x) * 3 + 3);
    expect(at(120, 20)[0]).toBeGreaterThan(200);
    expect(at(120, 20)[2]).toBeLessThan(60);
    expect(at(120, 300)[2]).toBeGreaterThan(200);
    expect(at(120, 300)[0]).toBeLessThan(60);
  });

  it('refuses a type other than JPEG or PNG from the bytes (415), whatever the declared type, storing nothing', async () => {
    const id = await newListing();
    const res = await upload(id, [{ name: 'file', data: gif(), type: 'image/jpeg', filename: 'photo.jpg' }]);
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({
      code: 'unsupported_media_type',
      status: 415,
      requestId: res.headers['x-request-id'],
    });
    expect(await list(id)).toEqual([]);
    expect(blobFiles()).toEqual([]);
  });

  it('refuses a file over 10 MB with 413, cutting it off, and keeps nothing of the request', async () => {
    const id = await newListing();
    const big = Buffer.concat([await jpeg(64, 48), Buffer.alloc(11 * 1024 * 1024, 7)]);
    const res = await upload(id, [
      { name: 'file', data: await jpeg(300, 200) },
      { name: 'file', data: big },
    ]);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'payload_too_large', status: 413 });
    expect(await list(id)).toEqual([]);
    await runtime.sweep.run({ requeueAfterMs: 0 });
    expect(blobFiles()).toEqual([]);
    const exact = await upload(id, [
      { name: 'file', data: Buffer.concat([await jpeg(64, 48), Buffer.alloc(10 * 1024 * 1024 - 5000, 0)]) },
    ]);
    expect(exact.statusCode).toBe(201);
  });

  it('refuses corrupt images (422 image_corrupt), and fails one whose data breaks past the header with a reason', async () => {
    const id = await newListing();
    for (const data of [
      corruptJpeg(),
      Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 3)]),
      Buffer.alloc(0),
    ]) {
      const res = await upload(id, [{ name: 'file', data }]);
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('image_corrupt');
    }
    expect(await list(id)).toEqual([]);

    const whole = await jpeg(800, 600, { quality: 95 });
    const truncated = whole.subarray(0, Math.floor(whole.length * 0.6));
    const accepted = await upload(id, [{ name: 'file', data: truncated }]);
    expect(accepted.statusCode).toBe(201);
    const [failed] = await settled(id);
    expect(failed).toMatchObject({
      status: 'failed',
      failureReason: expect.stringMatching(/damaged or incomplete/),
      width: 800,
      height: 600,
    });
    expect((await fetchFile(failed.urls!.thumb)).statusCode).toBe(404);
  });

  it('refuses decompression bombs from their header, before decoding (422 image_too_large)', async () => {
    const id = await newListing();
    for (const [data, limit] of [
      [await jpegBomb(), /width may be at most 20000 pixels/],
      [await pngBomb(), /width may be at most 20000 pixels/],
      [await jpegBomb(15_000, 15_000), /at most 50 megapixels/],
    ] as const) {
      const res = await upload(id, [{ name: 'file', data }]);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ code: 'image_too_large', detail: expect.stringMatching(limit) });
    }
    expect(await list(id)).toEqual([]);
  });

  it('adds virtual tours (https only), never primary, outside the image count', async () => {
    const id = await newListing();
    const tour = await call(alice, {
      method: 'POST',
      url: `/v1/listings/${id}/media`,
      payload: { type: 'virtual_tour', url: 'https://tours.example.com/t/123', caption: '3D walk-through' },
    });
    expect(tour.statusCode).toBe(201);
    expect(tour.json().items[0]).toMatchObject({
      kind: 'virtual_tour',
      url: 'https://tours.example.com/t/123',
      status: 'ready',
      isPrimary: false,
      urls: null,
      width: null,
    });
    for (const url of ['http://tours.example.com/t/1', 'ftp://x.example.com/a', 'javascript:alert(1)', 'not a url']) {
      const bad = await call(alice, {
        method: 'POST',
        url: `/v1/listings/${id}/media`,
        payload: { type: 'virtual_tour', url },
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().errors[0].path).toBe('url');
    }
    const extra = await call(alice, {
      method: 'POST',
      url: `/v1/listings/${id}/media`,
      payload: { type: 'virtual_tour', url: 'https://a.example.com/', colour: 'red' },
    });
    expect(extra.statusCode).toBe(422);
    const img = await upload(id, [{ name: 'file', data: await jpeg(100, 80) }]);
    expect(img.json().items[0]).toMatchObject({ isPrimary: true, order: 1 });
    const tourId = tour.json().items[0].id;
    const primaryTour = await call(alice, {
      method: 'PATCH',
      url: `/v1/listings/${id}/media/${tourId}`,
      payload: { isPrimary: true },
    });
    expect(primaryTour.statusCode).toBe(422);
    await settled(id);
    await runtime.relay.flush();
    expect(changes[changes.length - 1].payload.summary).toEqual({
      photoCount: 1,
      primaryPhoto: { id: img.json().items[0].id, urls: img.json().items[0].urls, caption: null },
      virtualTours: [{ id: tourId, url: 'https://tours.example.com/t/123', caption: '3D walk-through' }],
    });
  });

  it("answers 404 for an unknown listing and for another account's, without storing anything", async () => {
    const id = await newListing('acc_alice');
    const foreign = await upload(id, [{ name: 'file', data: await jpeg(100, 80) }], bob);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().code).toBe('listing_not_found');
    expect((await upload('lst_nope', [{ name: 'file', data: await jpeg(100, 80) }])).statusCode).toBe(404);
    expect((await call(bob, { method: 'GET', url: `/v1/listings/${id}/media` })).statusCode).toBe(404);
    expect(
      (
        await call(bob, {
          method: 'POST',
          url: `/v1/listings/${id}/media`,
          payload: { type: 'virtual_tour', url: 'https://a.example.com/' },
        })
      ).statusCode,
    ).toBe(404);
    expect(await list(id)).toEqual([]);
    expect(blobFiles()).toEqual([]);
  });

  it('takes an upload to a listing whose created event has not arrived, asking the listings service once', async () => {
    const id = h.newListingUnannounced('acc_alice');
    const before = h.listingsAsked();
    const res = await upload(id, [{ name: 'file', data: await jpeg(100, 80) }]);
    expect(res.statusCode).toBe(201);
    expect(h.listingsAsked()).toBe(before + 1);
    // Known from then on: the late event changes nothing and later requests need no call.
    await bus.publish('listings.listing.created', {
      eventId: `late-${id}`,
      accountId: 'acc_alice',
      listingId: id,
      version: 1,
      occurredAt: new Date().toISOString(),
      listing: listingPayload(id, 1),
    });
    expect(await list(id)).toHaveLength(1);
    expect(h.listingsAsked()).toBe(before + 1);
  });

  it("answers an unknown listing and another account's the same way, both after asking the listings service", async () => {
    const known = await newListing('acc_alice');
    const unannounced = h.newListingUnannounced('acc_alice');
    const answers = [];
    for (const id of [known, unannounced, 'lst_nope']) {
      const before = h.listingsAsked();
      const res = await call(bob, { method: 'GET', url: `/v1/listings/${id}/media` });
      expect(h.listingsAsked()).toBe(before + 1);
      answers.push({ status: res.statusCode, body: { ...res.json(), requestId: undefined, detail: undefined } });
    }
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(answers[0]).toMatchObject({ status: 404, body: { code: 'listing_not_found' } });
    // Bob's look did not make the listing his, nor Alice's unannounced one known to be hers.
    expect((await call(bob, { method: 'GET', url: `/v1/listings/${unannounced}/media` })).statusCode).toBe(404);
    expect(await list(unannounced)).toEqual([]);
  });

  it('keeps exactly one primary: the first upload, a PATCH moves it, deleting it promotes the first remaining image in order', async () => {
    const id = await newListing();
    const uploaded = (
      await upload(id, [
        { name: 'file', data: await jpeg(120, 90) },
        { name: 'file', data: await jpeg(120, 90) },
        { name: 'file', data: await jpeg(120, 90) },
      ])
    ).json().items as Media[];
    const [a, b, c] = uploaded.map((m) => m.id);
    const primaries = async () => (await list(id)).filter((m) => m.isPrimary).map((m) => m.id);
    expect(await primaries()).toEqual([a]);

    const patched = await call(alice, {
      method: 'PATCH',
      url: `/v1/listings/${id}/media/${c}`,
      payload: { isPrimary: true, caption: 'Kitchen' },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ id: c, isPrimary: true, caption: 'Kitchen' });
    expect(await primaries()).toEqual([c]);
    const unset = await call(alice, {
      method: 'PATCH',
      url: `/v1/listings/${id}/media/${c}`,
      payload: { isPrimary: false },
    });
    expect(unset.statusCode).toBe(422);

    // Order b, c, a: deleting the primary (c) promotes b, the first remaining.
    expect(
      (await call(alice, { method: 'PUT', url: `/v1/listings/${id}/media/order`, payload: { mediaIds: [b, c, a] } }))
        .statusCode,
    ).toBe(200);
    const removed = await call(alice, { method: 'DELETE', url: `/v1/listings/${id}/media/${c}` });
    expect(removed.json()).toEqual({ id: c, deleted: true });
    expect(await primaries()).toEqual([b]);
    await call(alice, { method: 'DELETE', url: `/v1/listings/${id}/media/${b}` });
    expect(await primaries()).toEqual([a]);
    await call(alice, { method: 'DELETE', url: `/v1/listings/${id}/media/${a}` });
    expect(await list(id)).toEqual([]);
    const again = await upload(id, [{ name: 'file', data: await jpeg(120, 90) }]);
    expect(again.json().items[0].isPrimary).toBe(true);
  });

  it('reorders with a permutation of every media id (tours included); anything else is 422 and changes nothing', async () => {
    const id = await newListing();
    const [a, b] = (
      (
        await upload(id, [
          { name: 'file', data: await jpeg(120, 90) },
          { name: 'file', data: await jpeg(120, 90) },
        ])
      ).json().items as Media[]
    ).map((m) => m.id);
    const t = (
      await call(alice, {
        method: 'POST',
        url: `/v1/listings/${id}/media`,
        payload: { type: 'virtual_tour', url: 'https://a.example.com/' },
      })
    ).json().items[0].id;
    for (const mediaIds of [[a, b], [a, b, t, t], [a, b, t, 'med_unknown'], [], [b, a, a]]) {
      const res = await call(alice, { method: 'PUT', url: `/v1/listings/${id}/media/order`, payload: { mediaIds } });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0].path).toBe('mediaIds');
    }
    expect((await list(id)).map((m) => m.id)).toEqual([a, b, t]);
    const res = await call(alice, {
      method: 'PUT',
      url: `/v1/listings/${id}/media/order`,
      payload: { mediaIds: [t, b, a] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().items.map((m: Media) => [m.id, m.order])).toEqual([
      [t, 0],
      [b, 1],
      [a, 2],
    ]);
    expect((await list(id)).map((m) => m.id)).toEqual([t, b, a]);
    expect((await list(id)).find((m) => m.id === a)!.isPrimary).toBe(true);
  });

  it('versions each media item: ETag, If-Match 412 on a stale version, captions cleared with null', async () => {
    const id = await newListing();
    const [item] = (
      await upload(id, [
        { name: 'file', data: await jpeg(120, 90) },
        { name: 'caption', value: 'Porch' },
      ])
    ).json().items as Media[];
    await settled(id);
    const got = await call(alice, { method: 'GET', url: `/v1/listings/${id}/media/${item.id}` });
    const etag = got.headers.etag as string;
    expect(etag).toBe(`"${got.json().version}"`);
    const ok = await call(alice, {
      method: 'PATCH',
      url: `/v1/listings/${id}/media/${item.id}`,
      payload: { caption: null },
      headers: { 'if-match': etag },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().caption).toBeNull();
    const stale = await call(alice, {
      method: 'PATCH',
      url: `/v1/listings/${id}/media/${item.id}`,
      payload: { caption: 'x' },
      headers: { 'if-match': etag },
    });
    expect(stale.statusCode).toBe(412);
    expect(stale.json().code).toBe('version_mismatch');
    expect(
      (await call(alice, { method: 'PATCH', url: `/v1/listings/${id}/media/${item.id}`, payload: { id: 'x' } }))
        .statusCode,
    ).toBe(422);
    expect(
      (
        await call(alice, { method: 'PATCH', url: `/v1/listings/${id}/media/med_none`, payload: { caption: 'x' } })
      ).json().code,
    ).toBe('media_not_found');
  });

  it('serves files without a key, with ETag / If-None-Match, and 404 once the media is deleted', async () => {
    const id = await newListing();
    const [item] = (await upload(id, [{ name: 'file', data: await jpeg(640, 480) }])).json().items as Media[];
    await settled(id);
    const first = await fetchFile(item.urls!.thumb);
    expect(first.statusCode).toBe(200);
    expect(Number(first.headers['content-length'])).toBe(first.rawPayload.length);
    const head = await app.inject({ method: 'HEAD', url: item.urls!.thumb });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('image/jpeg');
    expect(head.rawPayload.length).toBe(0);
    const again = await fetchFile(item.urls!.thumb, { 'if-none-match': first.headers.etag as string });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    expect((await fetchFile(item.urls!.original.replace('original', 'source'))).statusCode).toBe(404);
    expect((await fetchFile(`${item.urls!.original}?format=webp`)).statusCode).toBe(404);
    expect((await fetchFile('/files/AAAAAAAAAAAAAAAAAAAAAA/thumb')).statusCode).toBe(404);
    await call(alice, { method: 'DELETE', url: `/v1/listings/${id}/media/${item.id}` });
    for (const url of [item.urls!.original, item.urls!.large, item.urls!.thumb])
      expect((await fetchFile(url)).statusCode).toBe(404);
    expect(blobFiles()).toEqual([]);
  });

  it('holds the 50-image limit when uploads race: 45 stored, then 10 at once, exactly 5 win and the others get 409', async () => {
    const id = await newListing();
    const small = await jpeg(32, 24);
    const first = await upload(
      id,
      Array.from({ length: 45 }, () => ({ name: 'file' as const, data: small })),
    );
    expect(first.statusCode).toBe(201);
    const racing = await Promise.all(Array.from({ length: 10 }, () => upload(id, [{ name: 'file', data: small }])));
    const statuses = racing.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([...Array(5).fill(201), ...Array(5).fill(409)]);
    for (const r of racing.filter((x) => x.statusCode === 409))
      expect(r.json()).toMatchObject({ code: 'media_limit_reached', status: 409 });
    const items = await list(id);
    expect(items.filter((m) => m.kind === 'image')).toHaveLength(50);
    expect(items.filter((m) => m.isPrimary)).toHaveLength(1);
    // Tours do not count toward the 50.
    expect(
      (
        await call(alice, {
          method: 'POST',
          url: `/v1/listings/${id}/media`,
          payload: { type: 'virtual_tour', url: 'https://a.example.com/' },
        })
      ).statusCode,
    ).toBe(201);
    const over = await upload(id, [{ name: 'file', data: small }]);
    expect(over.statusCode).toBe(409);
  }, 60_000);

  it('refuses unknown form fields, misplaced captions and empty requests, storing nothing', async () => {
    const id = await newListing();
    const cases: Part[][] = [
      [{ name: 'caption', value: 'before any file' }],
      [
        { name: 'file', data: await jpeg(50, 50) },
        { name: 'caption', value: 'a' },
        { name: 'caption', value: 'b' },
      ],
      [
        { name: 'file', data: await jpeg(50, 50) },
        { name: 'colour', value: 'red' },
      ],
      [
        { name: 'file', data: await jpeg(50, 50) },
        { name: 'caption', value: 'x'.repeat(1001) },
      ],
      [{ name: 'title', value: 'nothing else' }],
    ];
    for (const parts of cases) {
      const res = await upload(id, parts);
      expect(res.statusCode).toBe(422);
    }
    const empty = await upload(id, []);
    expect([400, 422]).toContain(empty.statusCode);
    expect(await list(id)).toEqual([]);
    await runtime.sweep.run({ requeueAfterMs: 0 });
    expect(blobFiles()).toEqual([]);
  });

  it("lets agents read but not write; answers 401 without the gateway's signature", async () => {
    const id = await newListing();
    expect((await call(agent, { method: 'GET', url: `/v1/listings/${id}/media` })).statusCode).toBe(200);
    expect((await upload(id, [{ name: 'file', data: await jpeg(50, 50) }], agent)).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: `/v1/listings/${id}/media` })).statusCode).toBe(401);
  });

  it('pages through media in order with an opaque cursor', async () => {
    const id = await newListing();
    const small = await jpeg(32, 24);
    const ids = (
      (
        await upload(
          id,
          Array.from({ length: 5 }, () => ({ name: 'file' as const, data: small })),
        )
      ).json().items as Media[]
    ).map((m) => m.id);
    const p1 = (await call(alice, { method: 'GET', url: `/v1/listings/${id}/media?limit=2` })).json();
    expect(p1).toMatchObject({ total: 5, nextCursor: expect.any(String) });
    const p2 = (
      await call(alice, { method: 'GET', url: `/v1/listings/${id}/media?limit=2&cursor=${p1.nextCursor}` })
    ).json();
    const p3 = (
      await call(alice, { method: 'GET', url: `/v1/listings/${id}/media?limit=2&cursor=${p2.nextCursor}` })
    ).json();
    expect([...p1.items, ...p2.items, ...p3.items].map((m: Media) => m.id)).toEqual(ids);
    expect(p3.nextCursor).toBeNull();
    expect((await call(alice, { method: 'GET', url: `/v1/listings/${id}/media?cursor=garbage` })).statusCode).toBe(400);
  });

  it("deletes a listing's media and files when the listing is deleted, and ignores its late events", async () => {
    const id = await newListing();
    const [item] = (await upload(id, [{ name: 'file', data: await jpeg(200, 150) }])).json().items as Media[];
    await settled(id);
    expect(blobFiles().length).toBeGreaterThan(0);
    await bus.publish('listings.listing.deleted', {
      eventId: `deleted-${id}`,
      accountId: 'acc_alice',
      listingId: id,
      version: 2,
      occurredAt: new Date().toISOString(),
    });
    expect(blobFiles()).toEqual([]);
    expect((await fetchFile(item.urls!.thumb)).statusCode).toBe(404);
    expect((await call(alice, { method: 'GET', url: `/v1/listings/${id}/media` })).statusCode).toBe(404);
    await bus.publish('listings.listing.updated', {
      eventId: `late-${id}`,
      accountId: 'acc_alice',
      listingId: id,
      version: 1,
      occurredAt: new Date().toISOString(),
      listing: listingPayload(id, 1),
    });
    expect((await upload(id, [{ name: 'file', data: await jpeg(50, 50) }])).statusCode).toBe(404);
  });

  it("keeps a listing's media when a deleted event names an account that does not own the listing", async () => {
    const id = await newListing();
    const [item] = (await upload(id, [{ name: 'file', data: await jpeg(200, 150) }])).json().items as Media[];
    await settled(id);
    const files = blobFiles();
    await bus.publish('listings.listing.deleted', {
      eventId: `foreign-${id}`,
      accountId: 'acc_mallory',
      listingId: id,
      version: 2,
      occurredAt: new Date().toISOString(),
    });
    expect(blobFiles()).toEqual(files);
    expect((await fetchFile(item.urls!.thumb)).statusCode).toBe(200);
    expect((await call(alice, { method: 'GET', url: `/v1/listings/${id}/media` })).json().items).toHaveLength(1);
  });

  it('documents its routes in OpenAPI (upload, list, order, one item, files)', async () => {
    const docs = await createHttpApp({ service: 'media', logger: log, openapi: { title: 'media' } });
    await docs.register(mediaApp, { runtime });
    const res = await docs.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths;
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining([
        '/v1/listings/{id}/media',
        '/v1/listings/{id}/media/order',
        '/v1/listings/{id}/media/{mediaId}',
        '/files/{token}/{rendition}',
      ]),
    );
    expect(paths['/v1/listings/{id}/media'].post.responses['201']).toBeDefined();
    await docs.close();
  });

  it('releases the slot and the file of an upload whose request died, once it is 30 minutes old', async () => {
    const id = await newListing();
    // A request that stored its file and then vanished (its process died before the commit).
    const session = await runtime.uploads.begin({ who: alice }, id);
    await session.addFile(Readable.from([await jpeg(64, 48)]));
    expect(await list(id)).toEqual([]);
    expect(blobFiles().length).toBeGreaterThan(0);
    expect(await runtime.sweep.run({ requeueAfterMs: 0 })).toMatchObject({ abandoned: 0 });

    const later = await h.runtimeAt(() => new Date(Date.now() + 31 * 60 * 1000));
    expect(await later.sweep.run({ requeueAfterMs: 0 })).toMatchObject({ abandoned: 1 });
    expect(blobFiles()).toEqual([]);
    const small = await jpeg(32, 24);
    expect(
      (
        await upload(
          id,
          Array.from({ length: 50 }, () => ({ name: 'file' as const, data: small })),
        )
      ).statusCode,
    ).toBe(201);
  });

  it('queues unfinished images again at start: a job lost with the process is not lost for good', async () => {
    const id = await newListing();
    await runtime.stop();
    // With the workers stopped, the upload is stored and its job goes nowhere (as in a crash).
    const res = await upload(id, [{ name: 'file', data: await jpeg(300, 200) }]);
    expect(res.statusCode).toBe(201);
    await sleep(100);
    expect((await list(id))[0].status).toBe('processing');
    await runtime.start();
    expect((await settled(id))[0].status).toBe('ready');
  });
});
