import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_test_admin_key_0123456789abcdefghijkl';
const PLATFORM = 'ek_test_platform_key_0123456789abcdefghij';

/**
 * In the embedded profile the search index lives in the listings database and changes in the same
 * commit as the listing: a search right after a write's answer already shows it, with no waiting.
 */
describe('embedded search is in step with every acknowledged write', () => {
  let dir: string;
  let product: EmbeddedProduct;
  const call = (opts: InjectOptions) =>
    product.app.inject({ ...opts, headers: { authorization: `Bearer ${ADMIN}`, ...(opts.headers ?? {}) } });
  const searchIds = async (query: string): Promise<string[]> => {
    const res = await call({ method: 'GET', url: `/v1/listings?${query}&limit=100` });
    expect(res.statusCode).toBe(200);
    return res.json().items.map((l: { id: string }) => l.id);
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-search-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN, platformApiKey: PLATFORM });
  });
  afterEach(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds a listing right after its create, its change and not after its delete', async () => {
    const created = await call({
      method: 'POST',
      url: '/v1/listings',
      payload: listingBody({ externalId: 'STEP-1', source: 'feed', pricing: { listPrice: 412_345, currency: 'USD' } }),
    });
    expect(created.statusCode).toBe(201);
    const { id } = created.json();
    expect(await searchIds('minPrice=412345&maxPrice=412345')).toEqual([id]);

    const changed = await call({
      method: 'PATCH',
      url: `/v1/listings/${id}`,
      payload: { pricing: { listPrice: 512_345 } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(changed.statusCode).toBe(200);
    expect(await searchIds('minPrice=412345&maxPrice=412345')).toEqual([]);
    expect(await searchIds('minPrice=512345&maxPrice=512345')).toEqual([id]);

    expect((await call({ method: 'DELETE', url: `/v1/listings/${id}` })).statusCode).toBe(200);
    expect(await searchIds('minPrice=512345&maxPrice=512345')).toEqual([]);
  });

  it('finds every item of a bulk job as soon as the job reports success', async () => {
    const items = Array.from({ length: 100 }, (_, i) =>
      listingBody({
        externalId: `STEP-BULK-${i}`,
        source: 'feed',
        pricing: { listPrice: 700_000 + i, currency: 'USD' },
      }),
    );
    const accepted = await call({ method: 'POST', url: '/v1/listings/bulk', payload: { listings: items } });
    expect(accepted.statusCode).toBe(202);
    const { jobId } = accepted.json();
    const job = await eventually(
      async () => {
        const current = (await call({ method: 'GET', url: `/v1/jobs/${jobId}` })).json();
        if (current.state === 'queued' || current.state === 'running') throw new Error(`job ${current.state}`);
        return current;
      },
      { timeoutMs: 30_000, intervalMs: 5 },
    );
    expect(job).toMatchObject({ state: 'succeeded', progress: { total: 100, succeeded: 100, failed: 0 } });
    expect(await searchIds('minPrice=700000&maxPrice=700099')).toHaveLength(100);
  });
});
