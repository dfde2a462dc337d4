import { setTimeout as sleep } from 'node:timers/promises';
import type { Job, JobProgress } from '@estate/contracts/jobs';
import { describeWithEngines, eventually, listingBody, readSse } from '@estate/testing';
import { apiClient, startCluster, type Api, type Cluster, type RunningService } from './harness';

const JOBS = 3;
const UPDATED = 20;
const PER_JOB = 100;
const FINAL = ['succeeded', 'partially_failed', 'failed'];

/**
 * Tier 3: bulk jobs on the real engines with two listings processes sharing the work queue. One
 * is killed (SIGKILL) in the middle of a job; the other resumes it, and every item of every job
 * is applied exactly once.
 */
describeWithEngines(
  'bulk jobs across listings replicas (separate processes, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let api: Api;
    let run = '';
    let kept: RunningService;
    let victim: RunningService;

    /** The jobs a process's log says it started (JSON log lines). */
    const startedBy = (s: RunningService, msg = 'bulk job started') =>
      s
        .output()
        .split('\n')
        .filter((l) => l.includes(`"msg":"${msg}"`))
        .map((l) => (JSON.parse(l) as { jobId: string }).jobId);

    beforeAll(async () => {
      // Only the listings service is needed; the gateway reaches the first replica, the second is the one killed.
      cluster = await startCluster({
        name: 'sysbulk',
        engines: urls,
        replicas: { listings: 2, media: 0, leads: 0 },
        keys: { platform: false },
      });
      api = apiClient(cluster.gateway, cluster.keys.admin);
      run = cluster.run;
      kept = cluster.process('listings', 0);
      victim = cluster.process('listings', 1);
    }, 120_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('a worker killed in the middle of a job is resumed by the other replica, every item applied exactly once', async () => {
      const existing: string[] = [];
      for (let i = 0; i < UPDATED; i++) {
        const res = await api('POST', '/v1/listings', listingBody({ externalId: `U-${i}`, source: `sys-${run}` }));
        expect(res.status).toBe(201);
        existing.push(res.body.id);
      }
      // Each job updates the 20 listings above (by feed key) and creates 80 of its own.
      const jobIds: string[] = [];
      for (let j = 0; j < JOBS; j++) {
        const items = Array.from({ length: PER_JOB }, (_, i) =>
          i < UPDATED
            ? { externalId: `U-${i}`, source: `sys-${run}`, pricing: { listPrice: 200000 + j } }
            : listingBody({ externalId: `J${j}-${i}`, source: `sys-${run}` }),
        );
        const res = await api('POST', '/v1/listings/bulk', { listings: items });
        expect(res.status).toBe(202);
        jobIds.push(res.body.jobId);
      }

      // Kill the replica that is not behind the gateway as soon as it is well into one of the jobs.
      let killed: { jobId: string; processed: number } | undefined;
      const deadline = Date.now() + 200_000;
      while (!killed) {
        if (Date.now() > deadline)
          throw new Error(`the second replica never got into a job:\n${victim.output().slice(-3000)}`);
        for (const jobId of startedBy(victim)) {
          const { body } = await api('GET', `/v1/jobs/${jobId}`);
          if (body.state === 'running' && body.progress.processed >= 10 && body.progress.processed <= PER_JOB - 20) {
            victim.child.kill('SIGKILL');
            killed = { jobId, processed: body.progress.processed };
            break;
          }
        }
        await sleep(20);
      }
      await new Promise((r) =>
        victim.child.exitCode !== null || victim.child.signalCode !== null
          ? r(undefined)
          : victim.child.once('exit', r),
      );
      expect(victim.child.signalCode).toBe('SIGKILL');

      // Follow the interrupted job to its end through the gateway's event stream.
      const stream = await fetch(`${cluster.gateway}/v1/jobs/${killed.jobId}/events`, {
        headers: { authorization: `Bearer ${cluster.keys.admin}` },
      });
      expect(stream.status).toBe(200);
      const seen = (await readSse(stream)).events.map((e) => JSON.parse(e.data) as JobProgress);
      expect(seen[seen.length - 1]).toMatchObject({
        jobId: killed.jobId,
        state: 'succeeded',
        progress: { processed: PER_JOB },
      });

      const jobs: Job[] = [];
      for (const jobId of jobIds) {
        const job = await eventually(
          async () => {
            const read: Job = (await api('GET', `/v1/jobs/${jobId}`)).body;
            expect(FINAL).toContain(read.state);
            return read;
          },
          { timeoutMs: Math.max(deadline - Date.now(), 0), intervalMs: 200 },
        );
        jobs.push(job);
      }
      // The other replica took the interrupted job over from where it was recorded.
      expect(startedBy(kept, 'bulk job resumed')).toContain(killed.jobId);

      for (const job of jobs) {
        expect(job).toMatchObject({
          state: 'succeeded',
          progress: { total: PER_JOB, processed: PER_JOB, succeeded: PER_JOB, failed: 0 },
          errors: [],
        });
        expect(job.results.map((r) => r.index)).toEqual([...Array(PER_JOB).keys()]);
        expect(job.results.slice(0, UPDATED)).toEqual(existing.map((id, index) => ({ index, id, action: 'updated' })));
        expect(job.results.slice(UPDATED).every((r) => r.action === 'created')).toBe(true);
        expect(new Set(job.results.map((r) => r.id)).size).toBe(PER_JOB);
      }

      // Exactly once: every created listing is at version 1, every updated one was updated once per job...
      for (const id of existing) expect((await api('GET', `/v1/listings/${id}`)).body.version).toBe(1 + JOBS);
      for (const job of jobs) {
        for (const r of job.results.slice(UPDATED))
          expect((await api('GET', `/v1/listings/${r.id}`)).body).toMatchObject({ id: r.id, version: 1 });
      }
      // ...and nothing else was made (counted by the search index, which follows the listing events).
      await eventually(
        async () => {
          const page = await api('GET', `/v1/listings?source=sys-${run}&limit=1`);
          expect(page.body.total).toBe(UPDATED + JOBS * (PER_JOB - UPDATED));
        },
        { timeoutMs: 30_000 },
      );
    }, 300_000);
  },
);
