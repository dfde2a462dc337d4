import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, listingBody } from '@estate/testing';
import sharp from 'sharp';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const ADMIN = 'ek_metrics_test_admin_0123456789abcdefghi';

/** The value of one sample of the Prometheus text, e.g. `estate_jobs_finished_total{type="x",state="y"}`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('/metrics of the embedded product', () => {
  let dir: string;
  let product: EmbeddedProduct;
  const auth = { authorization: `Bearer ${ADMIN}` };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'metrics-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN });
  });
  afterAll(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts jobs by state with their duration, media processing, outbox lag, and reports backlogs', async () => {
    const before = (await product.app.inject({ url: '/metrics' })).body;
    const finishedBefore =
      sample(before, 'estate_jobs_finished_total', { type: 'listings.bulk_upsert', state: 'partially_failed' }) ?? 0;
    const created = await product.app.inject({
      method: 'POST',
      url: '/v1/listings',
      headers: auth,
      payload: listingBody(),
    });
    const { id } = created.json();
    const bulk = await product.app.inject({
      method: 'POST',
      url: '/v1/listings/bulk',
      headers: auth,
      payload: { listings: [listingBody({ externalId: 'M-1', source: 's' }), { pricing: { listPrice: -1 } }] },
    });
    expect(bulk.statusCode).toBe(202);
    const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a6' } })
      .jpeg()
      .toBuffer();
    const boundary = 'metricsboundary';
    const upload = await product.app.inject({
      method: 'POST',
      url: `/v1/listings/${id}/media`,
      headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: Buffer.concat([
        Buffer.from(
          `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`,
        ),
        jpeg,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]),
    });
    expect(upload.statusCode).toBe(201);

    const text = await eventually(
      async () => {
        const t = (await product.app.inject({ url: '/metrics' })).body;
        expect(
          sample(t, 'estate_jobs_finished_total', { type: 'listings.bulk_upsert', state: 'partially_failed' }),
        ).toBe(finishedBefore + 1);
        expect(sample(t, 'estate_media_processing_seconds_count', { outcome: 'ready' })).toBeGreaterThanOrEqual(1);
        return t;
      },
      { timeoutMs: 30_000 },
    );
    expect(sample(text, 'estate_jobs_submitted_total', { type: 'listings.bulk_upsert' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'estate_job_duration_seconds_count', { state: 'partially_failed' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'estate_outbox_lag_seconds_count', { subject: 'listings.listing.created' }),
    ).toBeGreaterThanOrEqual(1);
    // Backlogs are read at scrape time: every consumer of the process is listed, idle ones at 0.
    expect(sample(text, 'estate_bus_consumer_pending_messages', { stream: 'LISTINGS' })).toBe(0);
    expect(sample(text, 'estate_queue_depth', { stream: 'MEDIA_JOBS' })).toBe(0);
    expect(text).toContain('# TYPE estate_bus_redeliveries_total counter');
    expect(text).toContain('http_request_duration_seconds');
  }, 60_000);
});
