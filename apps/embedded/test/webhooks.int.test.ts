import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody, WebhookReceiver } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_0123456789abcdefghijkl';

describe('webhooks and the change feed in the embedded profile', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let receiver: WebhookReceiver;
  const call = (method: InjectOptions['method'], url: string, payload?: unknown, key = ADMIN) =>
    product.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}` },
      ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-webhooks-'));
    receiver = await WebhookReceiver.start();
    product = await startEmbedded(dir, {
      adminApiKey: ADMIN,
      webhooks: { allowPrivateTargets: true, retryScheduleMs: [100, 100] },
    });
  });
  afterEach(async () => {
    await receiver.stop();
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pushes listing and lead changes to a registered endpoint, signed, and lists them in the feed', async () => {
    const hook = await call('POST', '/v1/webhooks', { url: receiver.url('crm'), events: ['*'] });
    expect(hook.statusCode).toBe(201);
    receiver.secret('crm', hook.json().secret);

    const created = await call('POST', '/v1/listings', listingBody());
    expect(created.statusCode).toBe(201);
    const listingId = created.json().id;
    expect((await call('PATCH', `/v1/listings/${listingId}`, { pricing: { listPrice: 460000 } })).statusCode).toBe(200);
    const lead = await call('POST', '/v1/leads', { name: 'Ada', email: 'ada@example.com', source: 'website' });
    expect(lead.statusCode).toBe(201);
    const leadId = lead.json().id;
    expect((await call('PATCH', `/v1/leads/${leadId}`, { status: 'contacted' })).statusCode).toBe(200);
    expect((await call('DELETE', `/v1/listings/${listingId}`)).statusCode).toBe(200);
    const bulk = await call('POST', '/v1/listings/bulk', { listings: [{ pricing: { listPrice: 1 } }] });
    expect(bulk.statusCode).toBe(202);
    const jobId = bulk.json().jobId;

    const got = await eventually(() => {
      const types = receiver.verified('crm').map((d) => d.event!.type);
      expect(types).toEqual(
        expect.arrayContaining([
          'listing.created',
          'listing.updated',
          'listing.deleted',
          'lead.created',
          'lead.updated',
          'lead.status_changed',
          'job.completed',
        ]),
      );
      return receiver.verified('crm');
    });
    const jobEvent = got.find((d) => d.event!.type === 'job.completed')!.event!;
    expect(jobEvent.data).toEqual((await call('GET', `/v1/jobs/${jobId}`)).json());
    expect(jobEvent.data).toMatchObject({ id: jobId, state: 'failed', progress: { total: 1, failed: 1 } });
    expect(receiver.unverified()).toHaveLength(0);
    const leadEvent = got.find((d) => d.event!.type === 'lead.status_changed')!.event!;
    // The lead as GET answers it, at the version of the change or later.
    const current = (await call('GET', `/v1/leads/${leadId}`)).json();
    expect(Object.keys(leadEvent.data).sort()).toEqual(Object.keys(current).sort());
    expect(leadEvent.data).toMatchObject({ id: leadId, status: 'contacted' });

    const key = await call('POST', '/v1/api-keys', { role: 'integration', name: 'feed bridge' });
    expect(key.statusCode).toBe(201);
    const feed = await eventually(async () => {
      const page = (await call('GET', '/v1/events?limit=100', undefined, key.json().secret)).json();
      expect(page.items.map((e: { type: string }) => e.type)).toContain('listing.deleted');
      return page;
    });
    const listingTypes = feed.items
      .filter((e: { type: string }) => e.type.startsWith('listing.'))
      .map((e: { type: string }) => e.type);
    expect(listingTypes).toEqual(['listing.created', 'listing.updated', 'listing.deleted']);
    expect((await call('GET', '/v1/webhooks', undefined, key.json().secret)).statusCode).toBe(403);
  });
});
