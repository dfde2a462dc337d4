import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { buildDist, eventually, REPO_ROOT, ResoTestSource, spawnListening, type SourceRecord } from '@estate/testing';

const ADMIN = 'ek_test_admin_key_feed_crash_0123456789abc';
const RECORDS = 2000;
const key = (n: number) => `K${String(n).padStart(5, '0')}`;
const record = (n: number): SourceRecord => ({
  ListingKey: key(n),
  ModificationTimestamp: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
  StandardStatus: 'Active',
  PropertyType: 'Residential',
  ListPrice: 100_000 + n,
  UnparsedAddress: `${n} Main St`,
  City: 'Austin',
  StateOrProvince: 'TX',
  PostalCode: '78701',
  Country: 'US',
});

interface Running {
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
}

/** `npm start`'s process on the data folder, feeds allowed to read from this host. */
async function startProduct(dataDir: string): Promise<Running> {
  const started = spawnListening('the product', join(REPO_ROOT, 'dist', 'apps', 'embedded', 'main.js'), {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATA_DIR: dataDir,
      PORT: '0',
      ADMIN_API_KEY: ADMIN,
      RATE_LIMIT_PER_MINUTE: '100000',
      FEEDS_ALLOW_PRIVATE_SOURCES: '1',
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
      expect((await fetch(`${base}/health/ready`)).status).toBe(200);
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

/** What the data folder holds: the listings the feed wrote (their keys) and the run's recorded position. */
async function onDisk(dataDir: string, runId: string) {
  const store = SqliteDocumentStore.open(join(dataDir, 'listings.sqlite'));
  try {
    const listings = await (
      await store.collection<{ id: string; externalId?: string; version: number }>('listings')
    ).find({});
    const run = await (
      await store.collection<{ id: string; walk?: { listingKey: string } }>('bulk_jobs')
    ).findOne({ id: runId });
    return { listings, walk: run?.walk };
  } finally {
    await store.close();
  }
}

/**
 * The embedded process killed with SIGKILL in the middle of a feed run, then started again on the same data folder:
 * the run goes on from the page it had recorded, every record is applied once, and the position the run recorded is
 * never behind a write (each page's writes commit with the record of them).
 */
describe('a feed run whose process is killed (SIGKILL) mid-run', () => {
  let dir: string;
  let running: Running | undefined;
  let source: ResoTestSource;
  beforeAll(() => buildDist());
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-feed-crash-'));
    source = await new ResoTestSource().start();
    source.put(...[...Array(RECORDS).keys()].map(record));
  });
  afterEach(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGKILL');
      await running.exited;
    }
    await source.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes from the recorded page: every record applied once, the recorded position never behind a write', async () => {
    running = await startProduct(dir);
    const feed = await api(running.base, 'POST', '/v1/feeds', {
      name: 'Crash MLS',
      serviceRoot: source.url,
      auth: { type: 'bearer', token: 'source-token' },
      budget: { requestsPerSecond: 100 },
      pageSize: 20,
    });
    expect(feed.status).toBe(201);
    const started = await api(running.base, 'POST', `/v1/feeds/${feed.body.id}/runs`);
    expect(started.status).toBe(202);
    const runId = started.body.id as string;
    const base = running.base;
    await eventually(
      async () => {
        const job = (await api(base, 'GET', `/v1/jobs/${runId}`)).body;
        expect(job.state).toBe('running');
        expect(job.progress.processed).toBeGreaterThanOrEqual(200);
      },
      { timeoutMs: 30_000, intervalMs: 10 },
    );
    running.child.kill('SIGKILL');
    await running.exited;

    // What the killed process left: exactly the records up to the position the run recorded, nothing beyond it.
    const left = await onDisk(dir, runId);
    expect(left.walk).toBeDefined();
    const reached = Number(left.walk!.listingKey.slice(1));
    expect(reached).toBeLessThan(RECORDS - 1);
    expect(left.listings.map((l) => l.externalId).sort()).toEqual([...Array(reached + 1).keys()].map(key));

    running = await startProduct(dir);
    const again = running.base;
    const job = await eventually(
      async () => {
        const current = (await api(again, 'GET', `/v1/jobs/${runId}`)).body;
        expect(['succeeded', 'partially_failed', 'failed']).toContain(current.state);
        return current;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(job.state).toBe('succeeded');
    expect(job.ledger).toMatchObject({ fetched: RECORDS, created: RECORDS, updated: 0, unchanged: 0, failed: 0 });
    expect((await api(again, 'GET', `/v1/feeds/${feed.body.id}`)).body.cursor).toEqual({
      modificationTimestamp: record(RECORDS - 1).ModificationTimestamp,
      listingKey: key(RECORDS - 1),
    });
    running.child.kill('SIGKILL');
    await running.exited;
    const end = await onDisk(dir, runId);
    expect(end.listings).toHaveLength(RECORDS);
    expect(end.listings.every((l) => l.version === 1)).toBe(true);
  });
});
