import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, eventually, listingBody, REPO_ROOT, spawnListening } from '@estate/testing';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import sharp from 'sharp';

const ADMIN = 'ek_test_admin_key_0123456789abcdefghijkl';
const PLATFORM = 'ek_test_platform_key_0123456789abcdefghij';
const JOBS = 8;
const JOB_ITEMS = 100;

interface Running {
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
}

/** `npm start`'s process on the data folder, on a port of the system's choosing, ready to answer. */
async function startProduct(dataDir: string): Promise<Running> {
  const started = spawnListening('the product', join(REPO_ROOT, 'dist', 'apps', 'embedded', 'main.js'), {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATA_DIR: dataDir,
      PORT: '0',
      ADMIN_API_KEY: ADMIN,
      PLATFORM_API_KEY: PLATFORM,
      RATE_LIMIT_PER_MINUTE: '100000',
      LOG_LEVEL: 'warn',
    },
  });
  const { child } = started;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const base = await started.listening;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the product exited with ${child.exitCode}:\n${started.output()}`);
      const res = await fetch(`${base}/health/ready`);
      if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  return { child, base, exited };
}

async function api(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Bulk jobs of the data folder not yet ended, read from the listings database. */
async function unfinishedJobs(dataDir: string): Promise<number> {
  const store = SqliteDocumentStore.open(join(dataDir, 'listings.sqlite'));
  try {
    const jobs = await store.collection<{ id: string }>('bulk_jobs');
    return await jobs.count({ state: { $in: ['queued', 'running'] } });
  } finally {
    await store.close();
  }
}

/**
 * The embedded process killed with SIGKILL during a stream of writes and while bulk jobs run, then
 * started again at once on the same data folder: nothing acknowledged is lost, every event of an
 * acknowledged write reaches its consumers, and each bulk item is applied exactly once.
 */
describe('embedded profile killed mid-write (SIGKILL) and started again at once', () => {
  let dir: string;
  let running: Running | undefined;
  beforeAll(() => buildDist());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-crash-'));
  });
  afterEach(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGKILL');
      await running.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged write and event, and finishes each job with every item applied once', async () => {
    running = await startProduct(dir);
    const first = running.base;

    // Listings the jobs update: each bulk update must leave its listing exactly one version higher.
    const targets: string[] = [];
    for (let i = 0; i < JOBS * (JOB_ITEMS / 2); i++) {
      const res = await api(first, 'POST', '/v1/listings', listingBody({ externalId: `T-${i}`, source: 'crash' }));
      expect(res.status).toBe(201);
      targets.push(res.body.id);
    }
    // A stream of single writes, four at a time, until the process dies under it.
    const acknowledged: Array<{ id: string; externalId: string }> = [];
    let seq = 0;
    const writer = async (): Promise<void> => {
      for (;;) {
        const externalId = `S-${seq++}`;
        try {
          const res = await api(first, 'POST', '/v1/listings', listingBody({ externalId, source: 'crash' }));
          if (res.status === 201) acknowledged.push({ id: res.body.id, externalId });
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const writers = Promise.all([writer(), writer(), writer(), writer()]);
    await eventually(
      () => {
        if (acknowledged.length < 20) throw new Error(`${acknowledged.length} writes acknowledged so far`);
      },
      { timeoutMs: 60_000, intervalMs: 1 },
    );
    // Killed as soon as the jobs are accepted: some are running, others queued.
    const submitted = await Promise.all(
      Array.from({ length: JOBS }, (_, j) =>
        api(first, 'POST', '/v1/listings/bulk', {
          listings: Array.from({ length: JOB_ITEMS }, (_, i) =>
            i % 2 === 0
              ? listingBody({ externalId: `B-${j}-${i}`, source: 'crash-bulk' })
              : { id: targets[j * (JOB_ITEMS / 2) + (i - 1) / 2], pricing: { listPrice: 600_000 + j * 1000 + i } },
          ),
        }),
      ),
    );
    running.child.kill('SIGKILL');
    await running.exited;
    await writers;
    for (const res of submitted) expect(res.status).toBe(202);
    const jobIds = submitted.map((res) => res.body.jobId as string);
    expect(acknowledged.length).toBeGreaterThanOrEqual(20);
    // The kill caught jobs before their end (else this test would prove nothing about resuming them).
    expect(await unfinishedJobs(dir)).toBeGreaterThan(0);

    running = await startProduct(dir);
    const base = running.base;

    for (const { id, externalId } of acknowledged) {
      const res = await api(base, 'GET', `/v1/listings/${id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, externalId, source: 'crash' });
    }

    const jobs = await eventually(
      async () => {
        const states = await Promise.all(jobIds.map((id) => api(base, 'GET', `/v1/jobs/${id}`)));
        for (const s of states) if (s.body.state !== 'succeeded') throw new Error(`job ${s.body.id}: ${s.body.state}`);
        return states.map((s) => s.body);
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    for (const job of jobs)
      expect(job.progress).toEqual({ total: JOB_ITEMS, processed: JOB_ITEMS, succeeded: JOB_ITEMS, failed: 0 });
    const created = await api(base, 'GET', `/v1/listings?source=crash-bulk&limit=1`);
    expect(created.body.total).toBe(JOBS * (JOB_ITEMS / 2));
    for (const id of targets) {
      const res = await api(base, 'GET', `/v1/listings/${id}`);
      expect(res.body.version).toBe(2);
    }

    // Every event of an acknowledged write was handled by every consumer: no outbox entry is left, and the
    // media service knows the last listing acknowledged before the kill (it learns of listings from events).
    await eventually(
      async () => {
        const store = SqliteDocumentStore.open(join(dir, 'listings.sqlite'));
        try {
          const listings = await store.collection<{ id: string }>('listings');
          const pending = await listings.count({ _outboxPending: true });
          if (pending > 0) throw new Error(`${pending} listings still have events to publish`);
          const { n } = store.database.prepare('SELECT count(*) AS n FROM "outbox$events"').get() as { n: number };
          if (n > 0) throw new Error(`${n} events of committed writes are still in the outbox table`);
        } finally {
          await store.close();
        }
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const last = acknowledged[acknowledged.length - 1];
    const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#406080' } })
      .jpeg()
      .toBuffer();
    const form = new FormData();
    form.append('file', new Blob([photo], { type: 'image/jpeg' }), 'front.jpg');
    const upload = await fetch(`${base}/v1/listings/${last.id}/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}` },
      body: form,
    });
    expect(upload.status).toBe(201);
  }, 180_000);
});
