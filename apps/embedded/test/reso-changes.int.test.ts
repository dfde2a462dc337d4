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
describe('RESO Web API: photo changes and EntityEvent (embedded)', () => {
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

  it('serves EntityEvent over the change feed: listing and photo events in order, deletions included, by EntityEventSequence', async () => {
    const all = async (from: number) => {
      const rows: Row[] = [];
      let next: string | undefined = `/EntityEvent?$filter=EntityEventSequence gt ${from}&$orderby=EntityEventSequence`;
      while (next) {
        const res = await call({
          method: 'GET',
          url: next.startsWith('http') ? new URL(next).pathname + new URL(next).search : `/reso/odata${next}`,
          headers: { prefer: 'odata.maxpagesize=2' },
        });
        expect(res.statusCode).toBe(200);
        const body = res.json() as Json;
        rows.push(...body.value!);
        next = body['@odata.nextLink'] as string | undefined;
      }
      return rows;
    };
    const key = await create();
    expect(
      (await call({ method: 'PATCH', url: `/v1/listings/${key}`, payload: { mlsNumber: 'EV-1' } })).statusCode,
    ).toBe(200);
    await upload(key, ['Porch']);
    const photo = await eventually(async () => {
      const [m] = await media(key);
      expect(m).toBeDefined();
      return m.MediaKey as string;
    }, WAIT);
    const lead = await call({
      method: 'POST',
      url: '/v1/leads',
      payload: { name: 'Lee Event', email: 'lee.event@example.com', source: 'website' },
    });
    expect(lead.statusCode).toBe(201);
    expect((await call({ method: 'DELETE', url: `/v1/listings/${key}` })).statusCode).toBe(200);

    const events = await eventually(async () => {
      const rows = await all(0);
      expect(rows.map((r) => r.X_EventType)).toContain('listing.deleted');
      return rows;
    }, WAIT);
    // Strictly increasing, one after another; only listing and photo events (no lead, activity or job events).
    const seqs = events.map((e) => e.EntityEventSequence as number);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1] + 1);
    expect(new Set(events.map((e) => e.ResourceName))).toEqual(new Set(['Property', 'Media']));
    expect(events.map((e) => e.X_EventType).filter((t) => !/^(listing\.|media\.ready$)/.test(t as string))).toEqual([]);
    const ours = events.filter((e) => e.ResourceRecordKey === key || e.ResourceRecordKey === photo);
    const types = ours.map((e) => `${e.ResourceName as string}:${e.X_EventType as string}`);
    expect(types[0]).toBe('Property:listing.created');
    expect(types[1]).toBe('Property:listing.updated');
    expect(types).toContain('Media:media.ready');
    expect(types[types.length - 1]).toBe('Property:listing.deleted');
    const ready = ours.find((e) => e.ResourceName === 'Media')!;
    expect(ready.ResourceRecordUrl).toMatch(new RegExp(`/reso/odata/Property\\('${key}'\\)/Media$`));
    const deleted = ours[ours.length - 1];
    expect(deleted.ResourceRecordUrl).toMatch(new RegExp(`/reso/odata/Property\\('${key}'\\)$`));
    // The record of a deletion answers 404: the consumer removes it.
    expect((await call({ method: 'GET', url: `/reso/odata/Property('${key}')` })).statusCode).toBe(404);

    // The same number always names the same event; ranges, descending order and $top.
    const first = seqs[0];
    const again = await ok(`/EntityEvent?$filter=EntityEventSequence eq ${seqs[2]}`);
    expect(again.value).toEqual([events[2]]);
    const window = await ok(
      `/EntityEvent?$filter=EntityEventSequence ge ${first + 1} and EntityEventSequence lt ${first + 3}&$select=EntityEventSequence`,
    );
    expect(window.value).toEqual([{ EntityEventSequence: first + 1 }, { EntityEventSequence: first + 2 }]);
    const newest = await ok('/EntityEvent?$orderby=EntityEventSequence desc&$top=1&$count=true');
    expect(newest.value!.map((e) => e.EntityEventSequence)).toEqual([seqs[seqs.length - 1]]);
    expect(newest['@odata.count']).toBe(seqs.length);
    expect(newest['@odata.nextLink']).toBeUndefined();
    const upTo = await ok(`/EntityEvent?$filter=EntityEventSequence le ${first + 1}`);
    expect(upTo.value!.map((e) => e.EntityEventSequence)).toEqual([first, first + 1]);

    // Replication goes on from the last number: a later change comes next, nothing before it again.
    const last = seqs[seqs.length - 1];
    expect(await all(last)).toEqual([]);
    const more = await create();
    const later = await eventually(async () => {
      const rows = await all(last);
      expect(rows).toHaveLength(1);
      return rows;
    }, WAIT);
    expect(later[0]).toEqual(
      expect.objectContaining({
        EntityEventSequence: last + 1,
        ResourceRecordKey: more,
        X_EventType: 'listing.created',
      }),
    );

    // Anything but ranges on the sequence is 400, as an OData error.
    for (const bad of ["ResourceName eq 'Property'", 'EntityEventSequence gt 1 or EntityEventSequence lt 0']) {
      const res = await call({ method: 'GET', url: `/reso/odata/EntityEvent?$filter=${encodeURIComponent(bad)}` });
      expect({ bad, status: res.statusCode }).toEqual({ bad, status: 400 });
      expect(res.json().error.code).toBe('BadRequest');
      expect(res.headers['odata-version']).toBe('4.01');
    }
  });

  it('lists EntityEvent in the service document and $metadata, keyed on EntityEventSequence', async () => {
    const doc = await ok('/');
    expect(doc.value).toEqual(expect.arrayContaining([{ name: 'EntityEvent', kind: 'EntitySet', url: 'EntityEvent' }]));
    const xml = (await call({ method: 'GET', url: '/reso/odata/$metadata' })).body;
    expect(xml).toMatch(/<EntityType Name="EntityEvent">\s*<Key>\s*<PropertyRef Name="EntityEventSequence"\/>/);
    expect(xml).toContain('<Property Name="EntityEventSequence" Type="Edm.Int64" Nullable="false"/>');
    expect(xml).toContain('<EntitySet Name="EntityEvent" EntityType="org.reso.metadata.EntityEvent"/>');
  });
});
