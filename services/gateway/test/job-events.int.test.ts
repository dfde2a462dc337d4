import type { Identity } from '@estate/contracts/accounts';
import { jobProgressSubject, type Job, type JobProgress, type JobState } from '@estate/contracts/jobs';
import { AppError } from '@estate/platform/errors';
import { readSse } from '@estate/testing';
import type { JobsReader } from '../src/clients/listings.client';
import { ADMIN_KEY, PLATFORM_KEY, startGateway, type GatewayHarness } from './harness';

const JOB = 'job_abc';

function jobAt(state: JobState, processed: number, total = 3): Job {
  return {
    id: JOB,
    type: 'listings.bulk_upsert',
    state,
    progress: { total, processed, succeeded: processed, failed: 0 },
    results: [],
    errors: [],
    createdAt: '2025-01-01T00:00:00.000Z',
    startedAt: state === 'queued' ? null : '2025-01-01T00:00:01.000Z',
    finishedAt: ['queued', 'running'].includes(state) ? null : '2025-01-01T00:00:02.000Z',
  };
}
const progressAt = (state: JobState, processed: number): JobProgress => {
  const j = jobAt(state, processed);
  return { jobId: j.id, state: j.state, progress: j.progress, startedAt: j.startedAt, finishedAt: j.finishedAt };
};

/** Jobs as the listings service would answer them: only the owning account sees one. */
class StoredJobs implements JobsReader {
  owner = '';
  current = jobAt('queued', 0);
  onRead?: () => void;
  reads = 0;
  async get(who: Identity, jobId: string): Promise<Job> {
    this.reads++;
    this.onRead?.();
    if (jobId !== JOB || who.accountId !== this.owner)
      throw new AppError('job_not_found', `Job ${jobId} does not exist`);
    return this.current;
  }
}

describe('GET /v1/jobs/:id/events (gateway relay of job progress)', () => {
  let gw: GatewayHarness;
  let jobs: StoredJobs;
  let base: string;
  /** An admin key of another account than the job's. */
  let bob: string;

  const open = (path = `/v1/jobs/${JOB}/events`, key: string = ADMIN_KEY, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
  const states = (events: { data: string }[]) =>
    events.map((e) => JSON.parse(e.data) as JobProgress).map((p) => `${p.state}:${p.progress.processed}`);

  beforeEach(async () => {
    jobs = new StoredJobs();
    gw = await startGateway({ jobs, jobEventsHeartbeatMs: 100 });
    jobs.owner = gw.account.id;
    const created = await gw.call(PLATFORM_KEY, { method: 'POST', url: '/v1/accounts', payload: { name: 'Bob' } });
    bob = (created.json() as { adminKey: { secret: string } }).adminKey.secret;
    base = await gw.listen();
  });
  afterEach(async () => {
    await gw.close();
  });

  it('sends the current state first, then each newer notification in order, dropping stale ones, and ends after the final state', async () => {
    const res = await open();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const notify = (p: JobProgress) => gw.bus.notify(jobProgressSubject(JOB), p);
    const { events } = await readSse(res, (e) => {
      if (JSON.parse(e.data).state !== 'queued') return;
      notify(progressAt('running', 0));
      notify(progressAt('running', 2));
      notify(progressAt('running', 1)); // late: already past it
      notify(progressAt('running', 2)); // the same again
      notify({ ...progressAt('running', 3), jobId: 'job_other' }); // not this job
      notify({ state: 'running' } as unknown as JobProgress); // not a progress message
      notify(progressAt('running', 3));
      notify(progressAt('succeeded', 3));
      notify(progressAt('running', 3)); // after the end: the stream is closed
    });
    expect(states(events)).toEqual(['queued:0', 'running:0', 'running:2', 'running:3', 'succeeded:3']);
    expect(events.map((e) => e.event)).toEqual(Array(5).fill('progress'));
    expect(events.map((e) => e.id)).toEqual(['0-0', '0-1', '2-1', '3-1', '3-2']);
  });

  it('does not lose a notification published while the job was being read', async () => {
    jobs.onRead = () => {
      if (jobs.reads === 1) {
        gw.bus.notify(jobProgressSubject(JOB), progressAt('running', 1));
        gw.bus.notify(jobProgressSubject(JOB), progressAt('failed', 3));
      }
    };
    const { events } = await readSse(await open());
    expect(states(events)).toEqual(['queued:0', 'running:1', 'failed:3']);
  });

  it('re-reads the job with each heartbeat, so a lost final notification still ends the stream', async () => {
    jobs.current = jobAt('running', 1);
    const { events, comments } = await readSse(await open(), () => {
      jobs.current = jobAt('partially_failed', 3);
    });
    expect(states(events)).toEqual(['running:1', 'partially_failed:3']);
    expect(comments).toContain('keep-alive');
  });

  it('gives a late client the final state at once; a reconnect from that event is 204, from an earlier one gets the rest', async () => {
    jobs.current = jobAt('succeeded', 3);
    const { events } = await readSse(await open());
    expect(states(events)).toEqual(['succeeded:3']);
    expect((await open(undefined, ADMIN_KEY, { 'last-event-id': events[0].id! })).status).toBe(204);
    const resumed = await readSse(await open(undefined, ADMIN_KEY, { 'last-event-id': '1-1' }));
    expect(states(resumed.events)).toEqual(['succeeded:3']);
  });

  it('answers another account, an unknown job and a malformed id with 404 problem+json, and no caller with 401', async () => {
    for (const [path, key] of [
      [`/v1/jobs/${JOB}/events`, bob],
      ['/v1/jobs/job_nope/events', ADMIN_KEY],
      ['/v1/jobs/*/events', ADMIN_KEY],
    ] as const) {
      const res = await open(path, key);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { code: string }).code).toBe('job_not_found');
    }
    expect(jobs.reads).toBe(2); // the malformed id never reached the reader (nor a NATS subject)
    const anonymous = await fetch(`${base}/v1/jobs/${JOB}/events`);
    expect(anonymous.status).toBe(401);
  });

  it('ends open streams when the server shuts down, instead of waiting for their jobs', async () => {
    jobs.current = jobAt('running', 1);
    const res = await open();
    let opened!: () => void;
    const firstEvent = new Promise<void>((resolve) => (opened = resolve));
    const reading = readSse(res, () => opened());
    // Closed once the stream is under way (its first event is there), or when it ended without one.
    await Promise.race([firstEvent, reading]);
    await gw.close();
    const { events } = await reading;
    expect(states(events)).toEqual(['running:1']);
  });
});
