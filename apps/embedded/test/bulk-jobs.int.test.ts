import { startEmbedded } from './harness';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job, JobProgress } from '@estate/contracts/jobs';
import { listingBody, readSse } from '@estate/testing';
import type { EmbeddedProduct } from '../src/compose';

const ADMIN = 'ek_test_admin_key_0123456789abcdefghijkl';
const PLATFORM = 'ek_test_platform_key_0123456789abcdefghij';

/** Bulk jobs through the gateway edge of the embedded profile, over real HTTP (the event stream needs it). */
describe('bulk jobs and their event stream, embedded profile', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let base: string;

  const api = async (
    key: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const events = (key: string, jobId: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}`, ...headers } });
  const items = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => listingBody({ externalId: `${prefix}-${i}`, source: 'feed' }));

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-bulk-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN, platformApiKey: PLATFORM });
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("streams a job's progress in order from its current state to its final state, which GET /v1/jobs/:id confirms", async () => {
    // Two jobs ahead of it keep the watched job waiting in the queue while the client connects.
    for (const prefix of ['A', 'B'])
      expect((await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(100, prefix) })).status).toBe(202);
    const submitted = await api(ADMIN, 'POST', '/v1/listings/bulk', {
      listings: [...items(9, 'C'), { id: 'lst_unknown' }],
    });
    const res = await events(ADMIN, submitted.body.jobId);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('ratelimit-limit')).toBeTruthy();
    const stream = (await readSse(res)).events.map((e) => JSON.parse(e.data) as JobProgress);

    const final = stream[stream.length - 1];
    const job = (await api(ADMIN, 'GET', `/v1/jobs/${submitted.body.jobId}`)).body as Job;
    expect(job).toMatchObject({
      state: 'partially_failed',
      progress: { total: 10, processed: 10, succeeded: 9, failed: 1 },
    });
    expect(final).toEqual({
      jobId: job.id,
      state: job.state,
      progress: job.progress,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
    });
    for (let i = 1; i < stream.length; i++) {
      const [a, b] = [stream[i - 1], stream[i]];
      expect(
        b.progress.processed > a.progress.processed ||
          (b.progress.processed === a.progress.processed && a.state !== b.state),
      ).toBe(true);
    }
    expect(stream.slice(0, -1).every((p) => p.state === 'queued' || p.state === 'running')).toBe(true);
  });

  it('gives a late client the final state at once, then ends; reconnecting from it is 204', async () => {
    const { body } = await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(3, 'L') });
    let job: Job;
    do job = (await api(ADMIN, 'GET', `/v1/jobs/${body.jobId}`)).body;
    while (job.state === 'queued' || job.state === 'running');
    const { events: late } = await readSse(await events(ADMIN, body.jobId));
    expect(late).toHaveLength(1);
    expect(JSON.parse(late[0].data)).toMatchObject({
      state: 'succeeded',
      progress: { total: 3, processed: 3, succeeded: 3, failed: 0 },
    });
    expect((await events(ADMIN, body.jobId, { 'last-event-id': late[0].id! })).status).toBe(204);
  });

  it("lets only the job's account follow it, and only with a key", async () => {
    const { body } = await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(1, 'O') });
    const other = await api(PLATFORM, 'POST', '/v1/accounts', { name: 'Other brokerage' });
    const theirs = other.body.adminKey.secret as string;
    const foreign = await events(theirs, body.jobId);
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await foreign.json()) as { code: string }).code).toBe('job_not_found');
    expect((await api(theirs, 'GET', `/v1/jobs/${body.jobId}`)).status).toBe(404);
    expect((await fetch(`${base}/v1/jobs/${body.jobId}/events`)).status).toBe(401);
  });

  it('answers a retried bulk call with the same Idempotency-Key with the same job, and applies the batch once', async () => {
    const headers = { 'idempotency-key': 'feed-batch-42' };
    const first = await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(5, 'I') }, headers);
    const retry = await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(5, 'I') }, headers);
    expect(first.status).toBe(202);
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('location')).toBe(`/v1/jobs/${first.body.jobId}`);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    // The in-process queue runs jobs in order: once a later job has ended, a duplicate would have run too.
    const fence = await api(ADMIN, 'POST', '/v1/listings/bulk', { listings: items(1, 'F') });
    await readSse(await events(ADMIN, fence.body.jobId));
    const job = (await api(ADMIN, 'GET', `/v1/jobs/${first.body.jobId}`)).body as Job;
    expect(job.results.map((r) => r.action)).toEqual(Array(5).fill('created'));
    // A second run of the batch would have updated each listing to version 2.
    for (const r of job.results) expect((await api(ADMIN, 'GET', `/v1/listings/${r.id}`)).body.version).toBe(1);
  });
});
