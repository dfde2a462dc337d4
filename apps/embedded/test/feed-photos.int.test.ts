import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, ResoTestSource, type SourceRecord } from '@estate/testing';
import sharp from 'sharp';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_feed_photos_0123456789ab';
const WAIT = { timeoutMs: 30_000, intervalMs: 50 };
type Ledger = Record<string, number | null | boolean | string>;
type Run = { id: string; state: string; ledger: Ledger };

const jpeg = (shade: string) =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: shade } })
    .jpeg()
    .toBuffer();

/**
 * Photos of a feed's records go to the listings' galleries through the media service's upload path (embedded):
 * fetched again only when the source's timestamps move, de-duplicated by content, kept when a URL has expired.
 */
describe('feed photos (embedded): $expand=Media into galleries', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let source: ResoTestSource;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await product.app.inject({
      method: method as 'GET',
      url: path,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  const run = async (feedId: string): Promise<Run> => {
    const started = await call('POST', `/v1/feeds/${feedId}/runs`);
    expect(started.status).toBe(202);
    return eventually(async () => {
      const job = (await call('GET', `/v1/jobs/${started.body.id}`)).body as Run;
      if (['queued', 'running'].includes(job.state)) throw new Error(`run still ${job.state}`);
      return job;
    }, WAIT);
  };
  const gallery = async (key: string) => {
    const page = (await call('GET', `/v1/listings?limit=100&source=photo-mls`)).body as {
      items: Array<{ id: string; externalId: string }>;
    };
    const listing = page.items.find((l) => l.externalId === key)!;
    const media = (await call('GET', `/v1/listings/${listing.id}/media`)).body as {
      items: Array<{ id: string; caption?: string; order: number; isPrimary: boolean }>;
    };
    return media.items;
  };
  const record = (n: number, photos: Array<{ name: string; modified: string; preferred?: boolean }>): SourceRecord => ({
    ListingKey: `P${n}`,
    ModificationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    StandardStatus: 'Active',
    PropertyType: 'Residential',
    ListPrice: 300_000 + n,
    UnparsedAddress: `${n} Elm St`,
    City: 'Austin',
    StateOrProvince: 'TX',
    PostalCode: '78701',
    PhotosChangeTimestamp: photos
      .map((p) => p.modified)
      .sort()
      .pop(),
    Media: photos.map((p, i) => ({
      MediaKey: `${n}-${p.name}`,
      MediaURL: `${source.photoBase}/${p.name}`,
      Order: i,
      PreferredPhotoYN: p.preferred ?? false,
      ShortDescription: `photo ${p.name}`,
      MediaCategory: 'Photo',
      MediaModificationTimestamp: p.modified,
    })),
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'estate-feed-photos-'));
    product = await startEmbedded(dir, {
      adminApiKey: ADMIN,
      rateLimitPerMinute: 100_000,
      feeds: { allowPrivateSources: true },
    });
    source = await new ResoTestSource().start();
    source.photos.set('front', await jpeg('#3a6'));
    source.photos.set('back', await jpeg('#a36'));
    source.photos.set('front-copy', await jpeg('#3a6'));
    source.photos.set('side', await jpeg('#36a'));
  });
  afterAll(async () => {
    await product?.close();
    await source?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('downloads each photo once, then nothing while the timestamps stay; same bytes upload once; an expired URL keeps what we have', async () => {
    const t1 = '2026-01-01T00:00:00.000Z';
    source.put(
      record(1, [
        { name: 'front', modified: t1 },
        { name: 'back', modified: t1, preferred: true },
      ]),
      // The same bytes under two keys: downloaded twice, uploaded once.
      record(2, [
        { name: 'front-copy', modified: t1 },
        { name: 'front', modified: t1 },
      ]),
    );
    const created = await call('POST', '/v1/feeds', {
      name: 'Photo MLS',
      serviceRoot: source.url,
      auth: { type: 'bearer', token: 'source-token' },
      originatingSystemName: 'photo-mls',
      budget: { requestsPerSecond: 100 },
      media: true,
    });
    expect(created.status).toBe(201);
    expect(created.body.media).toBe(true);
    const feedId = created.body.id as string;

    const first = await run(feedId);
    expect(first.state).toBe('succeeded');
    expect(first.ledger).toMatchObject({ created: 2, mediaDownloaded: 4, mediaUploaded: 3, mediaFailed: 0 });
    expect(source.requests.every((r) => !r.startsWith('/odata/Property') || r.includes('%24expand=Media'))).toBe(true);
    // Order kept, the preferred photo first; captions from ShortDescription.
    const one = await gallery('P1');
    expect(one.map((m) => m.caption)).toEqual(['photo back', 'photo front']);
    expect(one[0].isPrimary).toBe(true);
    expect(await gallery('P2')).toHaveLength(1);

    // Nothing moved at the source: the second run downloads nothing.
    source.downloads.length = 0;
    const second = await run(feedId);
    expect(second.ledger).toMatchObject({ mediaDownloaded: 0, mediaUploaded: 0, mediaUnchanged: 4 });
    expect(source.downloads).toEqual([]);

    // P1's photos change: a new one whose URL has expired, the back photo dropped. The photo we have stays; the
    // failed one is fetched again (with a fresh record) by the next run once its URL works.
    const t2 = '2026-01-02T00:00:00.000Z';
    source.put({
      ...record(1, [
        { name: 'front', modified: t1 },
        { name: 'side', modified: t2 },
      ]),
      ModificationTimestamp: '2026-01-02T00:00:00.000Z',
    });
    source.faults = { expiredPhotos: new Set(['side']) };
    source.downloads.length = 0;
    const third = await run(feedId);
    expect(third.ledger).toMatchObject({ mediaDownloaded: 0, mediaFailed: 1, mediaRemoved: 1 });
    expect(source.downloads).toEqual(['side']);
    expect((await gallery('P1')).map((m) => m.caption)).toEqual(['photo front']);

    source.faults = {};
    source.downloads.length = 0;
    const fourth = await run(feedId);
    expect(fourth.ledger).toMatchObject({ mediaDownloaded: 1, mediaUploaded: 1, mediaFailed: 0 });
    expect(source.downloads).toEqual(['side']);
    await eventually(
      async () => expect((await gallery('P1')).map((m) => m.caption)).toEqual(['photo front', 'photo side']),
      WAIT,
    );
  });
});
