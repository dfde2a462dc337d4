import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import sharp from 'sharp';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_reso_changes_0123456789abc';
const WAIT = { timeoutMs: 20_000, intervalMs: 25 };

type Row = Record<string, unknown>;
type Json = Row & { value?: Row[] };

/** What changes of listings and photos look like to a RESO client: PhotosChangeTimestamp, MediaModificationTimestamp. */
describe('RESO Web API: photo changes (embedded)', () => {
  let dir: string;
  let product: EmbeddedProduct;

  const call = (opts: InjectOptions) =>
    product.app.inject({ ...opts, headers: { authorization: `Bearer ${ADMIN}`, ...(opts.headers ?? {}) } });
  const ok = async (path: string): Promise<Json> => {
    const res = await call({ method: 'GET', url: `/reso/odata${path}` });
    expect({ path, status: res.statusCode, body: res.statusCode === 200 ? 'ok' : res.body }).toEqual({
      path,
      status: 200,
      body: 'ok',
    });
    return res.json() as Json;
  };
  const create = async (over: Record<string, unknown> = {}) => {
    const res = await call({ method: 'POST', url: '/v1/listings', payload: listingBody(over) });
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };
  const property = async (key: string) =>
    (await ok(`/Property('${key}')?$select=ListingKey,PhotosCount,PhotosChangeTimestamp,X_Version`)) as Row;
  const media = async (key: string) => (await ok(`/Property('${key}')/Media`)).value!;
  const upload = async (listingId: string, captions: string[]) => {
    const jpeg = await sharp({ create: { width: 32, height: 24, channels: 3, background: '#36a' } })
      .jpeg()
      .toBuffer();
    const form = new FormData();
    for (const caption of captions) {
      form.append('file', new Blob([jpeg], { type: 'image/jpeg' }), 'p.jpg');
      form.append('caption', caption);
    }
    const encoded = new Response(form);
    const res = await call({
      method: 'POST',
      url: `/v1/listings/${listingId}/media`,
      payload: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    });
    expect(res.statusCode).toBe(201);
  };
  /** Waits until the listing's version moved past `version` and `check` holds. */
  const after = async (key: string, version: number, check: (p: Row) => void = () => {}) =>
    eventually(async () => {
      const p = await property(key);
      expect(p.X_Version as number).toBeGreaterThan(version);
      check(p);
      return p;
    }, WAIT);
  const later = (a: unknown, b: unknown) => expect(Date.parse(a as string)).toBeGreaterThan(Date.parse(b as string));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'estate-reso-changes-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN, rateLimitPerMinute: 100_000 });
  });

  afterAll(async () => {
    await product?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('moves PhotosChangeTimestamp when photos become ready, are edited or deleted, and MediaModificationTimestamp of each photo that changed', async () => {
    const key = await create();
    const bare = await create();
    const start = await property(key);
    expect(start.PhotosChangeTimestamp).toBeNull();

    await upload(key, ['Front', 'Back']);
    const ready = await after(key, start.X_Version as number, (p) => expect(p.PhotosCount).toBe(2));
    expect(ready.PhotosChangeTimestamp).toEqual(expect.any(String));
    const shown = await media(key);
    expect(shown.map((m) => m.ShortDescription)).toEqual(['Front', 'Back']);
    for (const m of shown) expect(Date.parse(m.MediaModificationTimestamp as string)).toBeGreaterThan(0);

    // A caption edit: that photo's time moves, the other's does not; the listing's photos changed.
    const edited = await call({
      method: 'PATCH',
      url: `/v1/listings/${key}/media/${shown[1].MediaKey as string}`,
      payload: { caption: 'Garden' },
    });
    expect(edited.statusCode).toBe(200);
    const captioned = await after(key, ready.X_Version as number);
    later(captioned.PhotosChangeTimestamp, ready.PhotosChangeTimestamp);
    const afterEdit = await media(key);
    expect(afterEdit.map((m) => m.ShortDescription)).toEqual(['Front', 'Garden']);
    later(afterEdit[1].MediaModificationTimestamp, shown[1].MediaModificationTimestamp);
    expect(afterEdit[0].MediaModificationTimestamp).toBe(shown[0].MediaModificationTimestamp);
    expect(afterEdit[1].ModificationTimestamp).toBe(afterEdit[1].MediaModificationTimestamp);

    // Deleting the first photo moves the second to Order 0 and makes it primary: its time moves too.
    const removed = await call({ method: 'DELETE', url: `/v1/listings/${key}/media/${shown[0].MediaKey as string}` });
    expect(removed.statusCode).toBe(200);
    const deleted = await after(key, captioned.X_Version as number, (p) => expect(p.PhotosCount).toBe(1));
    later(deleted.PhotosChangeTimestamp, captioned.PhotosChangeTimestamp);
    const left = await media(key);
    expect(left.map((m) => [m.MediaKey, m.Order, m.PreferredPhotoYN])).toEqual([[shown[1].MediaKey, 0, true]]);
    later(left[0].MediaModificationTimestamp, afterEdit[1].MediaModificationTimestamp);

    // The listing contract carries the same time; a listing edit does not move it.
    const patched = await call({ method: 'PATCH', url: `/v1/listings/${key}`, payload: { mlsNumber: 'PH-1' } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().media.photosChangedAt).toBe(deleted.PhotosChangeTimestamp);
    expect((await property(key)).PhotosChangeTimestamp).toBe(deleted.PhotosChangeTimestamp);

    // Filterable and orderable on the index; a listing whose photos never changed has none.
    const since = encodeURIComponent(`PhotosChangeTimestamp gt ${ready.PhotosChangeTimestamp as string}`);
    const changed = await ok(`/Property?$filter=${since}&$select=ListingKey`);
    expect(changed.value!.map((r) => r.ListingKey)).toEqual([key]);
    const none = await ok(`/Property?$filter=PhotosChangeTimestamp eq null&$select=ListingKey`);
    expect(none.value!.map((r) => r.ListingKey)).toContain(bare);
    expect(none.value!.map((r) => r.ListingKey)).not.toContain(key);
    const ordered = await ok('/Property?$orderby=PhotosChangeTimestamp desc&$select=ListingKey,PhotosChangeTimestamp');
    expect(ordered.value![0].ListingKey).toBe(key);
  });
});
