import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEstateClient, unwrap } from '@estate/client';
import { composeEmbedded, type EmbeddedProduct } from '@estate/embedded';
import { eventually } from '@estate/testing';
import pino from 'pino';
import { AGENTS, seedSandbox } from '../src/sandbox';

const ADMIN = 'ek_seed_test_admin_0123456789abcdefghijk';

describe('sandbox seed', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'seed-'));
    product = await composeEmbedded(
      { port: 0, host: '127.0.0.1', dataDir: dir, adminApiKey: ADMIN, rateLimitPerMinute: 100_000, logLevel: 'silent' },
      pino({ level: 'silent' }),
    );
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fills an account with listings and photos, agents, rules and leads with timelines, and can run again', async () => {
    const client = createEstateClient({ baseUrl: url, apiKey: ADMIN });
    const first = await seedSandbox(client, { listings: 6 });
    expect(first).toMatchObject({ listings: 6, agents: AGENTS.length, rules: 2, leads: 12 });
    expect(first.photos).toBeGreaterThanOrEqual(12);
    expect(first.activities).toBeGreaterThanOrEqual(24);

    const withPhotos = await eventually(
      async () => {
        const page = unwrap(
          await client.GET('/v1/listings', { params: { query: { limit: 100, source: 'sandbox-mls' } } }),
        );
        expect(page.items).toHaveLength(6);
        for (const l of page.items) expect(l.media.primaryPhoto).not.toBeNull();
        return page.items;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(withPhotos[0].media.photoCount).toBeGreaterThanOrEqual(2);
    const leads = unwrap(await client.GET('/v1/leads', { params: { query: { limit: 100 } } }));
    expect(leads.total).toBe(12);
    expect(leads.items.filter((l) => l.agentId).length).toBeGreaterThan(0);
    const timeline = unwrap(
      await client.GET('/v1/leads/{id}/activities', { params: { path: { id: leads.items[0].id } } }),
    );
    expect(timeline.items.length).toBeGreaterThanOrEqual(3);

    const second = await seedSandbox(client, { listings: 6 });
    expect(second).toMatchObject({ listings: 6, photos: 0, rules: 0, activities: 0 });
    expect(unwrap(await client.GET('/v1/agents')).total).toBe(AGENTS.length);
    expect(unwrap(await client.GET('/v1/leads')).total).toBe(12);
  }, 120_000);
});
