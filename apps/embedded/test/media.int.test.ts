import { startEmbedded } from './harness';
import { MemoryListingIndex } from '@estate/search/memory-listing.index';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '@estate/bus/memory.bus';
import { type BusMessage } from '@estate/bus';
import { listingCreate } from '@estate/contracts/listings';
import { composeListings } from '@estate/listings';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { eventually, identityFor, listingBody, unitsFor } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import pino from 'pino';
import sharp from 'sharp';
import type { EmbeddedProduct } from '../src/compose';

const ADMIN = 'ek_test_admin_key_media_0123456789abcdefgh';
const log = pino({ level: 'silent' });
/** Generous, as CPUs may be shared: renders and events take their time on a loaded machine. */
const WAIT = { timeoutMs: 60_000, intervalMs: 25 };
/** A test waits for renders and events twice or more. */
const TEST_TIMEOUT = 180_000;

function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
  } catch {
    return [];
  }
}

async function photo(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#3a6' } })
    .jpeg()
    .toBuffer();
}

describe('media in the embedded profile: upload through the gateway edge, summary on the listing, cascade delete', () => {
  let dir: string;
  let product: EmbeddedProduct;
  const call = (opts: InjectOptions) =>
    product.app.inject({ ...opts, headers: { authorization: `Bearer ${ADMIN}`, ...(opts.headers ?? {}) } });
  const upload = async (listingId: string, files: Buffer[]) => {
    const form = new FormData();
    for (const f of files) form.append('file', new Blob([f], { type: 'image/jpeg' }), 'photo.jpg');
    const encoded = new Response(form);
    return call({
      method: 'POST',
      url: `/v1/listings/${listingId}/media`,
      payload: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    });
  };
  const getListing = async (id: string) => (await call({ method: 'GET', url: `/v1/listings/${id}` })).json();
  /** The listing once its media summary shows `photoCount` photos: renders and events finish a moment after the answers. */
  const listingWithPhotos = (id: string, photoCount: number) =>
    eventually(async () => {
      const listing = await getListing(id);
      expect(listing.media.photoCount).toBe(photoCount);
      return listing;
    }, WAIT);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-media-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN, rateLimitPerMinute: 10_000 });
  });
  afterEach(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'shows the media summary on the listing once images are ready, with a new listing version each time',
    async () => {
      const listing = (await call({ method: 'POST', url: '/v1/listings', payload: listingBody() })).json();
      // Uploaded at once after create: the media service may not have seen the listing event yet.
      const res = await upload(listing.id, [await photo(1000, 750), await photo(640, 480)]);
      expect(res.statusCode).toBe(201);
      const [first] = res.json().items;
      const tour = await call({
        method: 'POST',
        url: `/v1/listings/${listing.id}/media`,
        payload: { type: 'virtual_tour', url: 'https://tours.example.com/abc', caption: 'Tour' },
      });
      expect(tour.statusCode).toBe(201);

      const shown = await eventually(async () => {
        const read = await getListing(listing.id);
        expect(read.media.photoCount).toBe(2);
        expect(read.media.virtualTours).toHaveLength(1);
        return read;
      }, WAIT);
      expect(shown.media).toEqual({
        photoCount: 2,
        primaryPhoto: { id: first.id, urls: first.urls, caption: null },
        virtualTours: [{ id: tour.json().items[0].id, url: 'https://tours.example.com/abc', caption: 'Tour' }],
        photosChangedAt: expect.any(String),
      });
      expect(shown.version).toBeGreaterThan(listing.version);
      const thumb = await product.app.inject({ method: 'GET', url: shown.media.primaryPhoto.urls.thumb });
      expect(thumb.statusCode).toBe(200);
      expect(await sharp(thumb.rawPayload).metadata()).toMatchObject({ width: 320, height: 240 });

      // A listing PATCH keeps the summary; a media change after it still lands.
      const patched = await call({
        method: 'PATCH',
        url: `/v1/listings/${listing.id}`,
        payload: { pricing: { listPrice: 500000 } },
      });
      expect(patched.json()).toMatchObject({ pricing: { listPrice: 500000 } });
      await call({ method: 'DELETE', url: `/v1/listings/${listing.id}/media/${first.id}` });
      const after = await listingWithPhotos(listing.id, 1);
      expect(after.media.primaryPhoto.id).toBe(res.json().items[1].id);
      expect(after.pricing.listPrice).toBe(500000);
    },
    TEST_TIMEOUT,
  );

  it(
    "deletes a listing's media and files with the listing",
    async () => {
      const listing = (await call({ method: 'POST', url: '/v1/listings', payload: listingBody() })).json();
      const [item] = (await upload(listing.id, [await photo(400, 300)])).json().items;
      await listingWithPhotos(listing.id, 1);
      const filesDir = join(dir, 'media', 'files');
      expect(filesDir.length > 0 && filesUnder(filesDir).filter((f) => f.endsWith('.bin')).length).toBe(6);

      expect((await call({ method: 'DELETE', url: `/v1/listings/${listing.id}` })).statusCode).toBe(200);
      // The media service hears of the deletion from its event and removes the files one after the other.
      await eventually(async () => {
        for (const url of Object.values(item.urls) as string[])
          expect({ url, status: (await product.app.inject({ method: 'GET', url })).statusCode }).toEqual({
            url,
            status: 404,
          });
        expect(filesUnder(filesDir).filter((f) => !f.includes(`${join(filesDir, 'tmp')}`))).toEqual([]);
      }, WAIT);
      expect((await call({ method: 'GET', url: `/v1/listings/${listing.id}/media` })).statusCode).toBe(404);
    },
    TEST_TIMEOUT,
  );
});

describe('listings: media summary from media.media.changed is idempotent by media revision', () => {
  it('applies a newer summary once, and ignores repeats and older revisions', async () => {
    const bus = new MemoryBus(log);
    const store = SqliteDocumentStore.open(':memory:');
    const listings = await composeListings({
      store,
      bus,
      units: unitsFor(store, bus, log),
      requeueUnfinishedJobs: true,
      waitForSearchEngine: false,
      log,
      index: new MemoryListingIndex(),
      feeds: { secretKey: 'media-test-feeds-key-0123456789-0123', allowPrivateSources: false },
    });
    await listings.start();
    const updates: BusMessage<'listings.listing.updated'>[] = [];
    await bus.subscribe(['listings.listing.updated'], { durable: 'test' }, async (m) => {
      updates.push(m);
    });
    try {
      const created = await listings.service.create({ who: identityFor('acc_a') }, listingCreate.parse(listingBody()));
      const summary = (n: number) => ({ photoCount: n, primaryPhoto: null, virtualTours: [] });
      const changed = (version: number, n: number, eventId: string) =>
        bus.publish('media.media.changed', {
          eventId,
          accountId: 'acc_a',
          listingId: created.id,
          version,
          occurredAt: new Date().toISOString(),
          change: 'processed',
          mediaIds: [],
          summary: summary(n),
        });
      await changed(3, 3, 'e3');
      await changed(3, 3, 'e3-again');
      await changed(2, 2, 'e2');
      await listings.relay.flush();
      const stored = await listings.service.get(identityFor('acc_a'), created.id);
      expect(stored.media.photoCount).toBe(3);
      expect(stored.version).toBe(2);
      expect(updates.map((u) => [u.payload.version, u.payload.listing.media.photoCount])).toEqual([[2, 3]]);
      // Another account's event for the same id changes nothing.
      await bus.publish('media.media.changed', {
        eventId: 'x',
        accountId: 'acc_b',
        listingId: created.id,
        version: 9,
        occurredAt: new Date().toISOString(),
        change: 'processed',
        mediaIds: [],
        summary: summary(9),
      });
      expect((await listings.service.get(identityFor('acc_a'), created.id)).media.photoCount).toBe(3);
    } finally {
      await listings.stop();
      await bus.close();
    }
  });
});
