import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createEstateClient, EstateApiError, unwrap, verifyWebhook, type EstateClient } from '../src';
import { composeEmbedded, type EmbeddedConfig, type EmbeddedProduct } from '@estate/embedded';
import { eventually } from '@estate/testing';
import pino from 'pino';
import sharp from 'sharp';

const ADMIN = 'ek_client_test_admin_0123456789abcdefghij';
/** Where clients would reach this product: image URLs in answers are absolute with it. */
const PUBLIC = 'https://api.brokerage.test';

/** The real product on a throwaway data folder, listening on a free port. */
async function startProduct(over: Partial<EmbeddedConfig> = {}): Promise<{ product: EmbeddedProduct; url: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'client-'));
  const product = await composeEmbedded(
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      adminApiKey: ADMIN,
      rateLimitPerMinute: 1000,
      logLevel: 'silent',
      ...over,
    },
    pino({ level: 'silent' }),
  );
  await product.app.listen({ port: 0, host: '127.0.0.1' });
  const close = product.close.bind(product);
  product.close = async () => {
    await close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { product, url: `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}` };
}

const listing = (externalId: string, listPrice = 450000) => ({
  externalId,
  source: 'client-test',
  pricing: { listPrice },
  propertyDetails: { propertyType: 'residential' as const, bedrooms: 3 },
  location: { address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701' } },
});

describe('@estate/client against the running product', () => {
  let product: EmbeddedProduct;
  let client: EstateClient;

  beforeAll(async () => {
    const started = await startProduct({ publicBaseUrl: PUBLIC });
    product = started.product;
    client = createEstateClient({ baseUrl: started.url, apiKey: ADMIN });
  });
  afterAll(() => product.close());

  it('creates, reads, updates (If-Match) and deletes a listing', async () => {
    const created = unwrap(await client.POST('/v1/listings', { body: listing('RT-1') }));
    expect(created).toMatchObject({ externalId: 'RT-1', status: 'active', version: 1 });
    const read = await client.GET('/v1/listings/{id}', { params: { path: { id: created.id } } });
    expect(read.data?.pricing.listPrice).toBe(450000);
    expect(read.response.headers.get('etag')).toBe('"1"');

    const patched = unwrap(
      await client.PATCH('/v1/listings/{id}', {
        params: { path: { id: created.id }, header: { 'If-Match': '"1"' } },
        body: { pricing: { listPrice: 430000 } },
      }),
    );
    expect(patched).toMatchObject({ version: 2, pricing: { listPrice: 430000 } });
    const stale = await client.PATCH('/v1/listings/{id}', {
      params: { path: { id: created.id }, header: { 'If-Match': '"1"' } },
      body: { status: 'pending' },
    });
    expect(stale.response.status).toBe(412);
    expect(stale.error).toMatchObject({ code: 'version_mismatch' });

    expect(unwrap(await client.DELETE('/v1/listings/{id}', { params: { path: { id: created.id } } }))).toEqual({
      id: created.id,
      deleted: true,
    });
    const gone = await client.GET('/v1/listings/{id}', { params: { path: { id: created.id } } });
    expect(gone.response.status).toBe(404);
    expect(() => unwrap(gone)).toThrow(EstateApiError);
  });

  it('sends Idempotency-Key on POST: a replay with the same key answers the first result', async () => {
    const sentKey = 'client-test-key-1';
    const a = await client.POST('/v1/listings', {
      body: listing('IDEM-2'),
      params: { header: { 'Idempotency-Key': sentKey } },
    });
    const b = await client.POST('/v1/listings', {
      body: listing('IDEM-2'),
      params: { header: { 'Idempotency-Key': sentKey } },
    });
    expect(b.response.status).toBe(201);
    expect(b.data?.id).toBe(a.data?.id);
  });

  it('uploads images as multipart and sees them processed', async () => {
    const { id } = unwrap(await client.POST('/v1/listings', { body: listing('UP-1') }));
    const jpeg = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#3a6' } })
      .jpeg()
      .toBuffer();
    const items = await client.uploadImages(id, [
      { data: new Uint8Array(jpeg), filename: 'front.jpg', caption: 'Front' },
      { data: new Uint8Array(jpeg), filename: 'back.jpg' },
    ]);
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({ kind: 'image', caption: 'Front', isPrimary: true });
    const ready = await eventually(
      async () => {
        const page = unwrap(await client.GET('/v1/listings/{id}/media', { params: { path: { id } } }));
        expect(page.items.map((m) => m.status)).toEqual(['ready', 'ready']);
        return page.items;
      },
      { timeoutMs: 30_000 },
    );
    expect(ready[0]).toMatchObject({ width: 640, height: 480 });
    expect(ready[0].urls?.thumb).toMatch(new RegExp(`^${PUBLIC}/files/[^/]+/thumb$`));
    const withPhoto = await eventually(async () => {
      const l = unwrap(await client.GET('/v1/listings/{id}', { params: { path: { id } } }));
      expect(l.media.primaryPhoto).not.toBeNull();
      return l;
    });
    expect(withPhoto.media.primaryPhoto?.urls.large).toMatch(new RegExp(`^${PUBLIC}/files/`));
  });

  it('submits a bulk job and follows its events to the end', async () => {
    const accepted = await client.POST('/v1/listings/bulk', {
      body: { listings: [listing('BULK-1'), listing('BULK-2'), { ...listing('BULK-3'), pricing: { listPrice: -1 } }] },
    });
    expect(accepted.response.status).toBe(202);
    const { jobId } = unwrap(accepted);
    expect(accepted.response.headers.get('location')).toBe(`/v1/jobs/${jobId}`);
    const seen = [];
    for await (const progress of client.followJob(jobId)) seen.push(progress);
    const last = seen[seen.length - 1];
    expect(last).toMatchObject({ jobId, state: 'partially_failed', progress: { total: 3, succeeded: 2, failed: 1 } });
    const job = unwrap(await client.GET('/v1/jobs/{id}', { params: { path: { id: jobId } } }));
    expect(job.errors).toEqual([expect.objectContaining({ index: 2, code: 'validation_failed' })]);
  }, 60_000);

  it('captures a lead and routes it to an agent', async () => {
    const agent = unwrap(
      await client.POST('/v1/agents', { body: { name: 'Casey Morgan', email: 'casey@example.com' } }),
    );
    expect(agent).toMatchObject({ active: true, capacity: 25 });
    unwrap(await client.PUT('/v1/routing/settings', { body: { defaultAgentIds: [agent.id] } }));
    const captured = await client.POST('/v1/leads', {
      body: { name: 'Jordan Reyes', email: 'Jordan.Reyes@example.com', source: 'Zillow' },
    });
    expect(captured.response.status).toBe(201);
    const lead = unwrap(captured);
    expect(lead).toMatchObject({ email: 'jordan.reyes@example.com', source: 'zillow', duplicate: false });
    const routed = unwrap(await client.POST('/v1/leads/{id}/route', { params: { path: { id: lead.id } } }));
    expect(routed).toMatchObject({
      agentId: agent.id,
      assignment: expect.objectContaining({ strategy: 'round_robin' }),
    });
    const again = await client.POST('/v1/leads', { body: { name: 'J. Reyes', email: 'jordan.reyes@example.com' } });
    expect(again.response.status).toBe(200);
    expect(again.data).toMatchObject({ id: lead.id, duplicate: true });
  });

  it('iterates over every item of a list, page after page', async () => {
    for (let i = 0; i < 7; i++) unwrap(await client.POST('/v1/listings', { body: listing(`IT-${i}`, 100000 + i) }));
    const ids = await eventually(async () => {
      const found: string[] = [];
      for await (const l of client.list('/v1/listings', {
        query: { limit: 2, source: 'client-test', minPrice: 100000, maxPrice: 100006 },
      }))
        found.push(l.externalId ?? '');
      expect(found.sort()).toEqual(['IT-0', 'IT-1', 'IT-2', 'IT-3', 'IT-4', 'IT-5', 'IT-6']);
      return found;
    });
    expect(ids).toHaveLength(7);
  });
});

describe('@estate/client retries', () => {
  it('retries a 429 after Retry-After with the same Idempotency-Key, then gives up with the problem', async () => {
    const { product, url } = await startProduct({ rateLimitPerMinute: 2 });
    try {
      const attempts: { status: number; key: string | null; retryAfter: string | null }[] = [];
      const client = createEstateClient({
        baseUrl: url,
        apiKey: ADMIN,
        maxRetries: 2,
        // The window is a minute long: waits are capped so that the test sees the retries without sitting them out.
        maxRetryDelayMs: 100,
        fetch: async (request) => {
          const response = await fetch(request);
          attempts.push({
            status: response.status,
            key: request.headers.get('idempotency-key'),
            retryAfter: response.headers.get('retry-after'),
          });
          return response;
        },
      });
      unwrap(await client.GET('/v1/listings'));
      unwrap(await client.GET('/v1/listings'));
      const limited = await client.POST('/v1/listings', { body: listing('RL-1') });
      expect(limited.response.status).toBe(429);
      expect(limited.error).toMatchObject({ code: 'rate_limited' });
      const posts = attempts.slice(2);
      expect(posts).toHaveLength(3);
      for (const a of posts) expect(a).toMatchObject({ status: 429, retryAfter: expect.stringMatching(/^\d+$/) });
      expect(new Set(posts.map((a) => a.key)).size).toBe(1);
      expect(posts[0].key).toEqual(expect.any(String));
    } finally {
      await product.close();
    }
  });
});

describe('verifyWebhook', () => {
  it('accepts a Standard Webhooks signature made with the secret, and refuses a changed body or another secret', () => {
    const secret = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
    const id = 'evt_1';
    const at = new Date();
    const body = JSON.stringify({ id, type: 'listing.created', data: { id: 'lst_1' } });
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    };
    expect(verifyWebhook(secret, body, headers)).toMatchObject({ type: 'listing.created' });
    expect(() => verifyWebhook(secret, body.replace('lst_1', 'lst_2'), headers)).toThrow();
    expect(() => verifyWebhook(`whsec_${Buffer.from('b'.repeat(32)).toString('base64')}`, body, headers)).toThrow();
  });
});
