import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import sharp from 'sharp';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_reso_0123456789abcdefghij';
const BASE = 'https://api.example.test';
const ROOT = `${BASE}/reso/odata`;
const WAIT = { timeoutMs: 20_000, intervalMs: 25 };

type Json = Record<string, unknown> & { value?: Array<Record<string, unknown>> };

describe('RESO Web API in the embedded profile (SPEC §13)', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let integration: { id: string; secret: string };
  let agentKey: string;
  const keys: string[] = [];

  const call = (opts: InjectOptions, key: string | null = ADMIN) =>
    product.app.inject({
      ...opts,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(opts.headers ?? {}) },
    });
  const reso = async (path: string, headers: Record<string, string> = {}, key: string | null = ADMIN) => {
    const res = await call({ method: 'GET', url: `/reso/odata${path}`, headers }, key);
    return {
      status: res.statusCode,
      headers: res.headers,
      body: String(res.headers['content-type']).includes('json') ? (res.json() as Json) : res.body,
    };
  };
  const ok = async (path: string, headers: Record<string, string> = {}): Promise<Json> => {
    const res = await reso(path, headers);
    expect({ path, status: res.status, body: res.status === 200 ? 'ok' : res.body }).toEqual({
      path,
      status: 200,
      body: 'ok',
    });
    expect(res.headers['odata-version']).toBe('4.01');
    return res.body as Json;
  };
  const keysOf = (body: Json) => (body.value ?? []).map((r) => r.ListingKey as string);
  const create = async (over: Record<string, unknown>) => {
    const res = await call({ method: 'POST', url: '/v1/listings', payload: listingBody(over) });
    expect(res.statusCode).toBe(201);
    const id = res.json().id as string;
    keys.push(id);
    return id;
  };
  const odataError = (body: unknown) =>
    expect(body).toEqual({
      error: {
        code: expect.any(String),
        message: expect.any(String),
        details: [],
        ...(typeof (body as Json).error === 'object' && 'target' in ((body as Json).error as object)
          ? { target: expect.any(String) }
          : {}),
      },
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'estate-reso-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN, publicBaseUrl: BASE, rateLimitPerMinute: 100_000 });
    const made = await call({ method: 'POST', url: '/v1/api-keys', payload: { name: 'feed', role: 'integration' } });
    integration = made.json();
    const agent = await call({
      method: 'POST',
      url: '/v1/agents',
      payload: { name: 'Ana Agent', email: 'ana@example.com' },
    });
    agentKey = (
      await call({
        method: 'POST',
        url: '/v1/api-keys',
        payload: { name: 'ana', role: 'agent', agentId: agent.json().id },
      })
    ).json().secret;
    const spec: Array<Record<string, unknown>> = [
      {
        status: 'active',
        beds: 1,
        price: 100000,
        city: 'Austin',
        features: ['Visitable'],
        listedAt: '2019-12-31T23:55:55-09:00',
      },
      {
        status: 'pending',
        beds: 3,
        price: 250000.5,
        city: 'Dallas',
        features: ['Visitable', 'Accessible Approach with Ramp'],
      },
      { status: 'active_under_contract', beds: 2, price: 400000, city: 'Houston', features: ['Bar'] },
      { status: 'active', beds: 5, price: 400000, city: 'Austin', features: [] },
      { status: 'closed', beds: 3, price: 999999.99, city: 'San Antonio', features: ['Accessible Approach with Ramp'] },
    ];
    for (const s of spec)
      await create({
        status: s.status,
        ...(s.listedAt ? { listedAt: s.listedAt } : {}),
        pricing: { listPrice: s.price },
        propertyDetails: { propertyType: 'residential', bedrooms: s.beds, features: s.features },
        location: { address: { street: '12 Elm St', city: s.city, stateOrProvince: 'TX', postalCode: '78701' } },
      });
  });

  afterAll(async () => {
    await product?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the service document and $metadata (EDMX 4.0, DD namespaces, every entity type keyed)', async () => {
    const doc = await ok('/');
    expect(doc['@odata.context']).toBe(`${ROOT}/$metadata`);
    expect(doc.value).toEqual(expect.arrayContaining([{ name: 'Property', kind: 'EntitySet', url: 'Property' }]));
    const res = await reso('/$metadata');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/xml/);
    const xml = res.body as string;
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<edmx:Edmx Version="4.0"/);
    expect(xml).toContain('<Schema Namespace="org.reso.metadata" xmlns="http://docs.oasis-open.org/odata/ns/edm">');
    expect(xml).toContain('<Schema Namespace="org.reso.metadata.enums"');
    const types = [...xml.matchAll(/<EntityType Name="(\w+)">\s*<Key>\s*<PropertyRef Name="(\w+)"\/>/g)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    expect(types).toEqual(['Property:ListingKey', 'Media:MediaKey', 'EntityEvent:EntityEventSequence']);
    expect(xml.match(/<EntityType /g)).toHaveLength(3);
    expect(xml).toContain('<Member Name="ActiveUnderContract" Value="1">');
    expect(xml).toContain(
      '<Property Name="StandardStatus" Type="org.reso.metadata.enums.StandardStatus" Nullable="false"/>',
    );
  });

  it('refuses requests without a key (401), with an agent key (403), and lets integration keys and client-credentials tokens in', async () => {
    expect((await reso('/Property', {}, null)).status).toBe(401);
    const agent = await reso('/Property', {}, agentKey);
    expect(agent.status).toBe(403);
    odataError(agent.body);
    expect((await reso('/Property', {}, integration.secret)).status).toBe(200);

    const token = (form: string) =>
      call(
        {
          method: 'POST',
          url: '/reso/token',
          payload: form,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
        null,
      );
    const issued = await token(
      `grant_type=client_credentials&client_id=${integration.id}&client_secret=${encodeURIComponent(integration.secret)}`,
    );
    expect(issued.statusCode).toBe(200);
    expect(issued.json()).toEqual({
      access_token: expect.stringMatching(/^rt_/),
      token_type: 'Bearer',
      expires_in: 3600,
    });
    expect((await reso('/Property?$top=1', {}, issued.json().access_token)).status).toBe(200);
    const wrong = await token(
      `grant_type=client_credentials&client_id=key_other&client_secret=${encodeURIComponent(integration.secret)}`,
    );
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe('invalid_client');
    expect((await token('grant_type=password&username=a&password=b')).json().error).toBe('unsupported_grant_type');
    const agentToken = await token(
      `grant_type=client_credentials&client_id=x&client_secret=${encodeURIComponent(agentKey)}`,
    );
    expect(agentToken.statusCode).toBe(401);

    // A token stands for its key: revoking the key ends it.
    const other = (
      await call({ method: 'POST', url: '/v1/api-keys', payload: { name: 'gone', role: 'integration' } })
    ).json();
    const otherToken = (
      await token(
        `grant_type=client_credentials&client_id=${other.id}&client_secret=${encodeURIComponent(other.secret)}`,
      )
    ).json().access_token;
    expect((await reso('/Property?$top=1', {}, otherToken)).status).toBe(200);
    expect((await call({ method: 'DELETE', url: `/v1/api-keys/${other.id}` })).statusCode).toBe(200);
    expect((await reso('/Property?$top=1', {}, otherToken)).status).toBe(401);
  });

  it('fetches by key, selects, and answers 404 for an unknown key or resource and 400 for an unknown field', async () => {
    const entity = await ok(`/Property('${keys[1]}')?$select=ListingKey,BedroomsTotal,StandardStatus`);
    expect(entity).toEqual({
      '@odata.context': `${ROOT}/$metadata#Property/$entity`,
      ListingKey: keys[1],
      BedroomsTotal: 3,
      StandardStatus: 'Pending',
    });
    const full = await ok(`/Property(ListingKey='${keys[0]}')`);
    expect(full).toMatchObject({
      ListingKey: keys[0],
      ListPrice: 100000,
      City: 'Austin',
      AccessibilityFeatures: ['Visitable'],
      OnMarketDate: '2020-01-01',
    });
    const missing = await reso(`/Property('lst_nope')`);
    expect(missing.status).toBe(404);
    odataError(missing.body);
    const unknown = await reso('/ResourceNotFound');
    expect(unknown.status).toBe(404);
    expect(unknown.headers['odata-version']).toBe('4.01');
    const bad = await reso(`/Property?$filter=BadField eq 'SoBad'`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: { code: 'BadRequest', message: expect.stringContaining('BadField'), target: 'BadField', details: [] },
    });
    expect((await reso('/Property?$filter=tolower(City) eq %27austin%27')).status).toBe(400);
    expect((await reso('/Property?$select=Nope')).status).toBe(400);
    expect((await reso('/Property?$search=x')).status).toBe(400);
  });

  it('answers in the version the client reads, and only in a format it takes', async () => {
    // OData-MaxVersion 4.0: the answer says 4.0 (never newer than the client reads); older clients are refused.
    const v40 = await reso('/Property?$top=1', { 'odata-maxversion': '4.0' });
    expect([v40.status, v40.headers['odata-version']]).toEqual([200, '4.0']);
    expect((await reso(`/Property('lst_nope')`, { 'odata-maxversion': '4.0' })).headers['odata-version']).toBe('4.0');
    const v30 = await reso('/Property?$top=1', { 'odata-maxversion': '3.0' });
    expect([v30.status, v30.headers['odata-version']]).toEqual([400, '4.01']);
    odataError(v30.body);
    // JSON resources refuse an Accept without JSON (406) before any work; $format overrides Accept.
    const xml = await reso('/Property?$top=1', { accept: 'application/xml' });
    expect(xml.status).toBe(406);
    odataError(xml.body);
    expect((await reso('/Property?$top=1&$format=json', { accept: 'application/xml' })).status).toBe(200);
    expect((await reso('/Property?$top=1&$format=xml')).status).toBe(406);
    expect((await reso('/', { accept: 'text/csv' })).status).toBe(406);
    expect((await reso('/Property?$top=1', { accept: 'application/json;odata.metadata=full' })).status).toBe(200);
    // $metadata is XML only; $count is text whatever is asked.
    expect((await reso('/$metadata', { accept: 'application/json' })).status).toBe(406);
    expect((await reso('/$metadata', { accept: 'application/xml' })).status).toBe(200);
    expect((await reso('/Property/$count', { accept: 'application/json' })).body).toBe('5');
  });

  it('filters by enum (namespaced or plain), has, any/all, now(), and combines them', async () => {
    const q = async (filter: string) => keysOf(await ok(`/Property?$filter=${encodeURIComponent(filter)}`)).sort();
    const k = (...i: number[]) => i.map((n) => keys[n]).sort();
    expect(await q("StandardStatus eq org.reso.metadata.enums.StandardStatus'ActiveUnderContract'")).toEqual(k(2));
    expect(await q("StandardStatus has org.reso.metadata.enums.StandardStatus'Active'")).toEqual(k(0, 3));
    expect(await q("StandardStatus ne 'Active'")).toEqual(k(1, 2, 4));
    expect(
      await q("AccessibilityFeatures has org.reso.metadata.enums.AccessibilityFeatures'AccessibleApproachWithRamp'"),
    ).toEqual(k(1, 4));
    expect(
      await q("AccessibilityFeatures/any(a:a eq org.reso.metadata.enums.AccessibilityFeatures'Visitable')"),
    ).toEqual(k(0, 1));
    expect(
      await q("AccessibilityFeatures/all(a:a eq org.reso.metadata.enums.AccessibilityFeatures'Visitable')"),
    ).toEqual(k(0, 2, 3));
    expect(await q('OriginalEntryTimestamp le now()')).toEqual(k(0, 1, 2, 3, 4));
    expect(await q('OnMarketTimestamp eq 2019-12-31T23:55:55-09:00')).toEqual(k(0));
    expect(await q("BedroomsTotal gt 1 and (City eq 'Austin' or City in ('Dallas'))")).toEqual(k(1, 3));
    expect(await q('ListPrice ge 250000.50 and not (ListPrice gt 400000)')).toEqual(k(1, 2, 3));
    // A replicating client asks for a page of keys at once: the longest list `in` takes, and a long `or` chain.
    const unknown = Array.from({ length: 198 }, (_, i) => `'lst_gone${i}'`);
    expect(await q(`ListingKey in (${[...unknown, `'${keys[1]}'`, `'${keys[4]}'`].join(',')})`)).toEqual(k(1, 4));
    const chain = Array.from({ length: 120 }, (_, i) => `BedroomsTotal eq ${10 + i}`);
    expect(await q(`${chain.join(' or ')} or ListingKey eq '${keys[2]}'`)).toEqual(k(2));
    // OData 4.01: system options in any case, `$` optional; never silently ignored.
    const austin = encodeURIComponent("City eq 'Austin'");
    expect(keysOf(await ok(`/Property?filter=${austin}&select=ListingKey`)).sort()).toEqual(k(0, 3));
    expect(keysOf(await ok(`/Property?$FILTER=${austin}&$Select=ListingKey`)).sort()).toEqual(k(0, 3));
    expect((await reso(`/Property?$filter=${austin}&filter=${austin}`)).status).toBe(400);
  });

  it('orders by ModificationTimestamp either way, pages with $top/$skip without overlap, and counts', async () => {
    const asc = keysOf(
      await ok('/Property?$orderby=ModificationTimestamp asc&$select=ListingKey,ModificationTimestamp'),
    );
    const desc = keysOf(
      await ok('/Property?$orderby=ModificationTimestamp desc&$select=ListingKey,ModificationTimestamp'),
    );
    expect(asc).toHaveLength(5);
    expect(desc).toEqual([...asc].reverse());
    const first = keysOf(await ok('/Property?$orderby=ModificationTimestamp asc&$top=2'));
    const second = keysOf(await ok('/Property?$orderby=ModificationTimestamp asc&$top=2&$skip=2'));
    expect(first).toEqual(asc.slice(0, 2));
    expect(second).toEqual(asc.slice(2, 4));
    const counted = await ok("/Property?$count=true&$top=1&$filter=City eq 'Austin'");
    expect(counted['@odata.count']).toBe(2);
    expect(counted.value).toHaveLength(1);
    // OData's /$count: the number alone, as text; $top, $skip and $orderby do not change it.
    const plain = await reso(`/Property/$count?$filter=${encodeURIComponent("City eq 'Austin'")}&$top=1&$skip=1`);
    expect([plain.status, plain.body, plain.headers['content-type'], plain.headers['odata-version']]).toEqual([
      200,
      '2',
      'text/plain; charset=utf-8',
      '4.01',
    ]);
    expect((await reso('/Property/$count')).body).toBe('5');
    expect((await reso('/Property/$count?$filter=Nope eq 1')).status).toBe(400);
    expect(counted['@odata.nextLink']).toBeUndefined();
  });

  it('pages by Prefer: odata.maxpagesize with signed nextLinks, $top limiting the total', async () => {
    const walk = async (path: string, size: number) => {
      const pages: string[][] = [];
      let next: string | undefined = path;
      while (next) {
        const res = await ok(next.replace(ROOT, ''), { prefer: `odata.maxpagesize=${size}` });
        pages.push(keysOf(res));
        next = res['@odata.nextLink'] as string | undefined;
      }
      return pages;
    };
    expect(await walk('/Property?$orderby=ModificationTimestamp,ListingKey', 2)).toEqual([
      keys.slice(0, 2),
      keys.slice(2, 4),
      keys.slice(4, 5),
    ]);
    expect((await walk('/Property?$top=3', 2)).flat()).toEqual([...keys].sort().slice(0, 3));
    const page = await ok('/Property?$top=3', { prefer: 'odata.maxpagesize=2' });
    const link = new URL(page['@odata.nextLink'] as string);
    const token = link.searchParams.get('$skiptoken')!;
    const forged = await reso(`/Property?$skiptoken=${token.slice(0, -3)}AAA`);
    expect(forged.status).toBe(400);
    const otherFilter = await reso(`/Property?$filter=BedroomsTotal gt 0&$skiptoken=${token}`);
    expect(otherFilter.status).toBe(400);
  });

  it('serves photos as Media: Property(k)/Media and $expand=Media in Order, with absolute MediaURL', async () => {
    const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a6' } })
      .jpeg()
      .toBuffer();
    const form = new FormData();
    for (const caption of ['Front', 'Back']) {
      form.append('file', new Blob([jpeg], { type: 'image/jpeg' }), 'p.jpg');
      form.append('caption', caption);
    }
    const encoded = new Response(form);
    const up = await call({
      method: 'POST',
      url: `/v1/listings/${keys[0]}/media`,
      payload: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    });
    expect(up.statusCode).toBe(201);
    const media = await eventually(async () => {
      const body = await ok(`/Property('${keys[0]}')/Media`);
      expect(body.value).toHaveLength(2);
      return body.value!;
    }, WAIT);
    expect(
      media.map((m) => [
        m.Order,
        m.ShortDescription,
        m.PreferredPhotoYN,
        m.ResourceName,
        m.ResourceRecordKey,
        m.MediaCategory,
      ]),
    ).toEqual([
      [0, 'Front', true, 'Property', keys[0], 'Photo'],
      [1, 'Back', false, 'Property', keys[0], 'Photo'],
    ]);
    expect(media[0].MediaURL).toMatch(new RegExp(`^${BASE}/files/`));
    const image = await product.app.inject({ method: 'GET', url: (media[0].MediaURL as string).slice(BASE.length) });
    expect(image.statusCode).toBe(200);
    const expanded = await ok(
      `/Property?$expand=Media&$select=ListingKey,PhotosCount&$filter=ListingKey eq '${keys[0]}'`,
    );
    const byListing = await ok(
      `/Media?$filter=${encodeURIComponent(`ResourceRecordKey in ('${keys[0]}', '${keys[1]}')`)}`,
    );
    expect(byListing.value!.map((m) => m.MediaKey)).toEqual(media.map((m) => m.MediaKey));
    expect((await reso('/Media')).status).toBe(400);
    expect(expanded.value).toEqual([
      {
        ListingKey: keys[0],
        PhotosCount: 2,
        Media: media.map((m) => expect.objectContaining({ MediaKey: m.MediaKey, Order: m.Order })),
      },
    ]);
  });

  it('leaves deleted listings out', async () => {
    const gone = await create({ pricing: { listPrice: 5 } });
    expect((await reso(`/Property('${gone}')`)).status).toBe(200);
    expect((await call({ method: 'DELETE', url: `/v1/listings/${gone}` })).statusCode).toBe(200);
    keys.pop();
    expect((await reso(`/Property('${gone}')`)).status).toBe(404);
    expect(keysOf(await ok('/Property'))).not.toContain(gone);
  });

  it('replicates with nextLink under concurrent writes: no listing lost, no version seen twice', async () => {
    const stable = [...keys];
    const walked: Array<{ key: string; version: number }> = [];
    let next: string | undefined = '/Property?$orderby=ModificationTimestamp,ListingKey&$select=ListingKey,X_Version';
    let writes = 0;
    while (next) {
      const page = await ok(next.replace(ROOT, ''), { prefer: 'odata.maxpagesize=2' });
      for (const r of page.value ?? []) walked.push({ key: r.ListingKey as string, version: r.X_Version as number });
      next = page['@odata.nextLink'] as string | undefined;
      // Between pages: a new listing and an update of one already walked.
      if (writes < 4) {
        writes++;
        await create({ pricing: { listPrice: 1000 + writes } });
        const walkedKey = walked[0].key;
        expect(
          (await call({ method: 'PATCH', url: `/v1/listings/${walkedKey}`, payload: { mlsNumber: `M${writes}` } }))
            .statusCode,
        ).toBe(200);
      }
    }
    const seen = new Set(walked.map((w) => w.key));
    for (const key of stable) expect(seen.has(key)).toBe(true);
    const versions = walked.map((w) => `${w.key}@${w.version}`);
    expect(new Set(versions).size).toBe(versions.length);
  });
});
