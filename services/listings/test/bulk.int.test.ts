import { RetryLater, Unprocessable } from '@estate/bus';
import type { Job } from '@estate/contracts/jobs';
import { eventually, identityFor, listingBody } from '@estate/testing';
import { markOf, submittedCommand } from '../src/bulk.rules';
import { BULK_JOBS_COLLECTION, BulkJobRepository, type BulkJobDoc } from '../src/repositories/bulk-job.repository';
import { alice, bob, ListingsHarness } from './harness';

const FINAL = ['succeeded', 'partially_failed', 'failed'];
const commandFor = (jobId: string) =>
  submittedCommand({ id: jobId, accountId: alice.accountId, createdAt: new Date().toISOString() });

describe('bulk create-or-update as tracked jobs (listings service, embedded adapters)', () => {
  let h: ListingsHarness;
  const call: ListingsHarness['call'] = (...args) => h.call(...args);
  const bulk = (listings: unknown[], who = alice) => call(who, 'POST', '/v1/listings/bulk', { listings });
  const getJob = async (id: string, who = alice): Promise<Job> => (await call(who, 'GET', `/v1/jobs/${id}`)).json();
  const listing = async (id: string) => (await call(alice, 'GET', `/v1/listings/${id}`)).json();
  const total = async (who = alice) => (await call(who, 'GET', '/v1/listings?limit=1')).json().total as number;

  /** Waits for the job to end and its listing events to be out (the search index behind GET /v1/listings follows them). */
  async function finished(jobId: string): Promise<Job> {
    const job = await eventually(
      async () => {
        const current = await getJob(jobId);
        if (!FINAL.includes(current.state))
          throw new Error(`job ${jobId} still ${current.state}: ${JSON.stringify(current.progress)}`);
        return current;
      },
      { timeoutMs: 15_000, intervalMs: 10 },
    );
    await h.runtime.relay.flush();
    return job;
  }
  async function submitAndWait(listings: unknown[], who = alice): Promise<Job> {
    const res = await bulk(listings, who);
    expect(res.statusCode).toBe(202);
    return finished(res.json().jobId);
  }

  afterEach(() => h.close());

  /** The `listings.bulk-job.completed` events published about a job. */
  const completions = (jobId: string) =>
    h.events.flatMap((e) => (e.subject === 'listings.bulk-job.completed' && e.payload.jobId === jobId ? [e] : []));

  describe('with a running worker', () => {
    beforeEach(async () => {
      h = await ListingsHarness.start();
    });

    it('answers 202 with the job and its Location, then applies 100 mixed items with per-item results and errors', async () => {
      const plain: { id: string }[] = [];
      for (let i = 0; i < 5; i++) plain.push((await call(alice, 'POST', '/v1/listings', listingBody())).json());
      const keyed: { id: string }[] = [];
      for (let i = 0; i < 5; i++) {
        keyed.push(
          (await call(alice, 'POST', '/v1/listings', listingBody({ externalId: `OLD-${i}`, source: 'feed' }))).json(),
        );
      }

      const items: unknown[] = [];
      for (let i = 0; i < 60; i++) items.push(listingBody({ externalId: `NEW-${i}`, source: 'feed' }));
      for (const p of plain) items.push({ id: p.id, pricing: { listPrice: 999000 } });
      for (let i = 0; i < 5; i++) items.push({ externalId: `OLD-${i}`, source: 'feed', status: 'pending' });
      for (let i = 0; i < 10; i++) items.push(listingBody({ mlsNumber: `M-${i}` }));
      items.push({ ...listingBody({ externalId: 'BAD-80', source: 'feed' }), colour: 'red' });
      items.push(listingBody({ externalId: 'BAD-81', source: 'feed', pricing: { listPrice: -5 } }));
      items.push({ status: 'active', pricing: { listPrice: 1 }, propertyDetails: { propertyType: 'land' } });
      items.push({ id: 'lst_does_not_exist', status: 'closed' });
      items.push(listingBody({ externalId: 'BAD-84' }));
      items.push({ id: plain[0].id, status: 'sold' });
      items.push({ id: plain[1].id, pricing: { listPrice: null } });
      for (let i = 60; i < 73; i++) items.push(listingBody({ externalId: `NEW-${i}`, source: 'feed' }));
      expect(items).toHaveLength(100);

      const res = await bulk(items);
      expect(res.statusCode).toBe(202);
      const { jobId, state } = res.json();
      expect(state).toBe('queued');
      expect(jobId).toMatch(/^job_/);
      expect(res.headers.location).toBe(`/v1/jobs/${jobId}`);

      const job = await finished(jobId);
      expect(job).toMatchObject({
        id: jobId,
        type: 'listings.bulk_upsert',
        state: 'partially_failed',
        progress: { total: 100, processed: 100, succeeded: 93, failed: 7 },
        createdAt: expect.any(String),
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
      });
      expect(job.results.map((r) => r.index)).toEqual([
        ...Array(80).keys(),
        ...Array.from({ length: 13 }, (_, i) => 87 + i),
      ]);
      const byIndex = new Map(job.results.map((r) => [r.index, r]));
      for (let i = 0; i < 60; i++)
        expect(byIndex.get(i)).toMatchObject({ action: 'created', id: expect.stringMatching(/^lst_/) });
      plain.forEach((p, k) => expect(byIndex.get(60 + k)).toEqual({ index: 60 + k, id: p.id, action: 'updated' }));
      keyed.forEach((p, k) => expect(byIndex.get(65 + k)).toEqual({ index: 65 + k, id: p.id, action: 'updated' }));
      for (let i = 70; i < 80; i++) expect(byIndex.get(i)?.action).toBe('created');
      expect(new Set(job.results.map((r) => r.id)).size).toBe(93);

      expect(job.errors).toEqual([
        {
          index: 80,
          externalId: 'BAD-80',
          code: 'validation_failed',
          path: 'colour',
          message: expect.stringContaining('colour: is not a known field'),
        },
        {
          index: 81,
          externalId: 'BAD-81',
          code: 'validation_failed',
          path: 'pricing.listPrice',
          message: expect.stringContaining('pricing.listPrice'),
        },
        {
          index: 82,
          code: 'validation_failed',
          path: 'location',
          message: expect.stringContaining('location: is required'),
        },
        { index: 83, code: 'listing_not_found', path: 'id', message: expect.stringContaining('lst_does_not_exist') },
        {
          index: 84,
          externalId: 'BAD-84',
          code: 'validation_failed',
          path: 'source',
          message: expect.stringContaining('go together'),
        },
        { index: 85, code: 'validation_failed', path: 'status', message: expect.stringContaining('status') },
        {
          index: 86,
          code: 'validation_failed',
          path: 'pricing.listPrice',
          message: expect.stringContaining('pricing.listPrice'),
        },
      ]);

      expect(await total()).toBe(10 + 83);
      expect(await listing(plain[2].id)).toMatchObject({ version: 2, pricing: { listPrice: 999000 } });
      expect(await listing(keyed[3].id)).toMatchObject({
        version: 2,
        status: 'pending',
        pricing: { listPrice: 450000 },
      });
      // Item 60 changed its price; item 85 (an invalid status) changed nothing.
      expect(await listing(plain[0].id)).toMatchObject({ version: 2, status: 'active' });
      expect(await listing(byIndex.get(5)!.id)).toMatchObject({ version: 1, externalId: 'NEW-5', source: 'feed' });

      // The very events single writes publish, carrying the bulk call's request id.
      await h.runtime.relay.flush();
      const created = h.events.filter((e) => e.subject === 'listings.listing.created');
      const updated = h.events.filter((e) => e.subject === 'listings.listing.updated');
      expect(created).toHaveLength(10 + 83);
      expect(updated).toHaveLength(10);
      const single = created[0];
      const fromBulk = created.find((e) => e.payload.listingId === byIndex.get(0)!.id)!;
      expect(Object.keys(fromBulk.payload).sort()).toEqual(Object.keys(single.payload).sort());
      expect(fromBulk.requestId).toBe(res.headers['x-request-id']);
      expect(updated.find((e) => e.payload.listingId === plain[2].id)?.payload).toMatchObject({
        version: 2,
        listing: { pricing: { listPrice: 999000 } },
      });
    });

    it('updates rather than duplicates when a feed sends the same batch twice', async () => {
      const batch = [0, 1, 2].map((i) =>
        listingBody({ externalId: `MLS-${i}`, source: 'acme', pricing: { listPrice: 100000 + i } }),
      );
      const first = await submitAndWait(batch);
      expect(first.state).toBe('succeeded');
      expect(first.results.map((r) => r.action)).toEqual(['created', 'created', 'created']);
      const second = await submitAndWait(batch);
      expect(second.state).toBe('succeeded');
      expect(second.results).toEqual(first.results.map((r) => ({ ...r, action: 'updated' })));
      expect(await total()).toBe(3);
      for (const r of second.results) expect((await listing(r.id)).version).toBe(2);

      // The same key twice in one batch: created by the first, updated by the second.
      const twice = await submitAndWait([
        listingBody({ externalId: 'DUP', source: 'acme' }),
        { externalId: 'DUP', source: 'acme', status: 'closed' },
      ]);
      expect(twice.results).toEqual([
        { index: 0, id: twice.results[0].id, action: 'created' },
        { index: 1, id: twice.results[0].id, action: 'updated' },
      ]);
      expect(await listing(twice.results[0].id)).toMatchObject({ status: 'closed', version: 2 });
    });

    it('applies items on the same listing in item order while other items run beside them', async () => {
      const existing = (
        await call(alice, 'POST', '/v1/listings', listingBody({ externalId: 'ORD', source: 'feed' }))
      ).json();
      const items: unknown[] = [];
      for (let i = 0; i < 60; i++) {
        if (i % 3 === 0) items.push({ externalId: 'ORD', source: 'feed', pricing: { listPrice: 100000 + i } });
        else if (i % 10 === 7) items.push({ id: existing.id, propertyDetails: { bedrooms: i } });
        else items.push(listingBody({ externalId: `FREE-${i}`, source: 'feed' }));
      }
      const job = await submitAndWait(items);
      expect(job.state).toBe('succeeded');
      expect(job.results.map((r) => r.index)).toEqual([...Array(60).keys()]);
      const writes = items.filter(
        (item) =>
          (item as { externalId?: string }).externalId === 'ORD' || (item as { id?: string }).id === existing.id,
      ).length;
      // The last write of each field wins: price from item 57, bedrooms from item 47; one version per write.
      expect(await listing(existing.id)).toMatchObject({
        version: 1 + writes,
        pricing: { listPrice: 100057 },
        propertyDetails: { bedrooms: 47 },
      });
      const prices = h.events
        .filter((e) => e.subject === 'listings.listing.updated' && e.payload.listingId === existing.id)
        .map((e) => (e.payload as { listing: { pricing: { listPrice: number } } }).listing.pricing.listPrice);
      expect(prices.filter((p, i) => i === 0 || p !== prices[i - 1])).toEqual(
        Array.from({ length: 20 }, (_, k) => 100000 + 3 * k),
      );
    });

    it('refuses 101 items, an empty list and bodies of another shape, storing nothing and queuing no job', async () => {
      const tooMany = await bulk(
        Array.from({ length: 101 }, (_, i) => listingBody({ externalId: `X-${i}`, source: 'feed' })),
      );
      expect(tooMany.statusCode).toBe(422);
      expect(tooMany.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(tooMany.json()).toMatchObject({ code: 'bulk_limit_exceeded', errors: [{ path: 'listings' }] });

      const empty = await bulk([]);
      expect(empty.statusCode).toBe(422);
      expect(empty.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'listings' }] });
      for (const payload of [
        {},
        { listings: listingBody() },
        { listings: [listingBody()], extra: 1 },
        { listings: ['not an object'] },
      ]) {
        const res = await call(alice, 'POST', '/v1/listings/bulk', payload);
        expect({ payload, status: res.statusCode, code: res.json().code }).toEqual({
          payload,
          status: 422,
          code: 'validation_failed',
        });
      }
      const notJson = await call(alice, 'POST', '/v1/listings/bulk', '{"listings": [', {
        'content-type': 'application/json',
      });
      expect(notJson.statusCode).toBe(400);

      expect(await (await h.store.collection('listings')).count({})).toBe(0);
      const jobs = await BulkJobRepository.open(h.store);
      expect(await jobs.collection.count({})).toBe(0);
      expect(await (await h.store.collection('bulk_job_items')).count({})).toBe(0);
    });

    it('publishes progress in order on jobs.<id>.progress, ending with the final state', async () => {
      const items = Array.from({ length: 20 }, (_, i) =>
        i === 7 ? { id: 'lst_missing' } : listingBody({ externalId: `P-${i}`, source: 'feed' }),
      );
      const job = await submitAndWait(items);
      const mine = h.progress.filter((p) => p.jobId === job.id);
      const final = mine.pop();
      expect(final).toEqual({
        jobId: job.id,
        state: 'partially_failed',
        progress: job.progress,
        startedAt: job.startedAt,
        finishedAt: job.finishedAt,
      });
      expect(mine[0]).toMatchObject({
        state: 'running',
        progress: { total: 20, processed: 0, succeeded: 0, failed: 0 },
        finishedAt: null,
      });
      expect(mine.every((p) => p.state === 'running' && p.startedAt === job.startedAt)).toBe(true);
      // Recorded and announced in groups, in order, up to the last item (never more than 20 unrecorded).
      const processed = mine.map((p) => p.progress.processed);
      expect(processed[processed.length - 1]).toBe(20);
      processed.slice(1).forEach((n, i) => expect(n - processed[i]).toBeGreaterThan(0));
      processed.slice(1).forEach((n, i) => expect(n - processed[i]).toBeLessThanOrEqual(20));
      expect(job.progress).toEqual({ total: 20, processed: 20, succeeded: 19, failed: 1 });
    });

    it('keeps jobs to their account (404) and bulk to the roles that write listings (403)', async () => {
      const job = await submitAndWait([listingBody()]);
      const foreign = await call(bob, 'GET', `/v1/jobs/${job.id}`);
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toMatchObject({ code: 'job_not_found' });
      expect((await call(alice, 'GET', '/v1/jobs/job_nope')).json().code).toBe('job_not_found');
      const agent = identityFor('acc_alice', 'agent', 'agt_1');
      expect((await bulk([listingBody()], agent)).statusCode).toBe(403);
      expect((await call(agent, 'GET', `/v1/jobs/${job.id}`)).statusCode).toBe(403);
      const integration = identityFor('acc_alice', 'integration');
      expect((await submitAndWait([listingBody()], integration)).state).toBe('succeeded');
    });

    it("ends a job whose every item fails as failed, with each item's error", async () => {
      const job = await submitAndWait([{ id: 'lst_gone', status: 'closed' }, { pricing: { listPrice: 1 } }]);
      expect(completions(job.id).map((e) => e.payload.job)).toEqual([job]);
      expect(job).toMatchObject({
        state: 'failed',
        progress: { total: 2, processed: 2, succeeded: 0, failed: 2 },
        results: [],
      });
      expect(job.errors.map((e) => [e.index, e.code, e.path])).toEqual([
        [0, 'listing_not_found', 'id'],
        [1, 'validation_failed', 'propertyDetails'],
      ]);
    });

    it('leaves a job held by a live worker to it: a second delivery comes back later', async () => {
      const jobs = await BulkJobRepository.open(h.store);
      await h.runtime.bulkWorker.stop();
      const { jobId } = (await bulk([listingBody()])).json();
      expect(await jobs.claim(jobId, 'other-worker', new Date(), 60_000, true)).not.toBeNull();
      await expect(h.runtime.bulkWorker.run(commandFor(jobId), 2)).rejects.toBeInstanceOf(RetryLater);
      expect(await total()).toBe(0);
      expect((await getJob(jobId)).progress.processed).toBe(0);
    });

    it("hands back a command whose job is not in its store (another deployment's), and drops it once it is old", async () => {
      await expect(h.runtime.bulkWorker.run(commandFor('job_elsewhere'), 1)).rejects.toBeInstanceOf(RetryLater);
      const stale = { ...commandFor('job_elsewhere'), occurredAt: new Date(Date.now() - 11 * 60_000).toISOString() };
      await expect(h.runtime.bulkWorker.run(stale, 40)).rejects.toBeInstanceOf(Unprocessable);
    });

    it('fails the remaining items of a job taken up too many times without ending', async () => {
      const jobs = await BulkJobRepository.open(h.store);
      await h.runtime.bulkWorker.stop();
      const { jobId } = (await bulk([listingBody(), listingBody()])).json();
      await jobs.collection.updateOne({ id: jobId }, { $set: { attempts: 8 } });
      await h.runtime.bulkWorker.run(commandFor(jobId), 1);
      const job = await getJob(jobId);
      expect(job).toMatchObject({
        state: 'failed',
        progress: { total: 2, processed: 2, succeeded: 0, failed: 2 },
        finishedAt: expect.any(String),
      });
      expect(job.errors.map((e) => [e.index, e.code])).toEqual([
        [0, 'internal_error'],
        [1, 'internal_error'],
      ]);
      expect(h.progress.filter((p) => p.jobId === jobId).pop()?.state).toBe('failed');
      await h.runtime.relay.flush();
      expect(completions(jobId).map((e) => e.payload.job)).toEqual([job]);
      expect(await total()).toBe(0);
    });

    it("publishes the job's end once, with its counts, from the same write that ends it (also when the relay was down)", async () => {
      const jobs = await BulkJobRepository.open(h.store);
      // The relay down: the job's command waits in the outbox too, and the test hands it to the worker.
      await h.runtime.relay.stop();
      const { jobId } = (await bulk([listingBody(), { pricing: { listPrice: 1 } }])).json();
      await h.runtime.bulkWorker.run(commandFor(jobId), 1);
      // Ended, and nothing published yet: the event waits in the job's outbox, as after a crash here.
      const job = await getJob(jobId);
      expect(job).toMatchObject({ state: 'partially_failed', progress: { total: 2, succeeded: 1, failed: 1 } });
      expect(completions(jobId)).toEqual([]);
      const stored = await jobs.collection.findOne({ id: jobId });
      expect(stored).toMatchObject({ _outboxPending: true, version: 2 });
      expect(stored?._outbox?.map((e) => e.subject)).toEqual([
        'listings.bulk-job.submitted',
        'listings.bulk-job.completed',
      ]);

      await h.runtime.relay.flush();
      await h.runtime.relay.flush();
      const [completed, ...more] = completions(jobId);
      expect(more).toEqual([]);
      expect(completed.payload).toEqual({
        eventId: `${jobId}:completed`,
        accountId: alice.accountId,
        jobId,
        version: 2,
        occurredAt: job.finishedAt,
        job,
      });
      expect(await jobs.collection.findOne({ id: jobId })).toMatchObject({ _outboxPending: false, _outbox: [] });
    });
  });

  it.each([
    ['a job of this version', false],
    ['a job made before ids were derived in order, resumed after the upgrade', true],
  ])(
    'resumes a half-done job after a crash, applying no item twice (also the one written but not recorded): %s',
    async (_, before) => {
      // No worker yet: the job stays queued, and a "crashed worker" is simulated on the store.
      h = await ListingsHarness.start({ start: false });
      const existing = (
        await call(alice, 'POST', '/v1/listings', listingBody({ externalId: 'E-0', source: 'feed' }))
      ).json();
      const items = [
        ...Array.from({ length: 4 }, (_, i) => listingBody({ externalId: `K-${i}`, source: 'feed' })),
        listingBody({ mlsNumber: 'no-key-4' }),
        listingBody({ externalId: 'K-5', source: 'feed' }),
        listingBody({ mlsNumber: 'no-key-6' }),
        { externalId: 'E-0', source: 'feed', pricing: { listPrice: 123456 } },
        ...Array.from({ length: 2 }, (_, i) => listingBody({ externalId: `K-${8 + i}`, source: 'feed' })),
      ];
      const { jobId } = (await bulk(items)).json();
      const jobs = await BulkJobRepository.open(h.store);
      if (before)
        await (
          await h.store.collection<BulkJobDoc>(BULK_JOBS_COLLECTION)
        ).updateOne({ id: jobId }, { $unset: { listingIds: true } });
      const dead = 'crashed-worker';
      const claimed = await jobs.claim(jobId, dead, new Date(), 3_600_000, true);
      expect(claimed).not.toBeNull();
      // Items 0..4 applied and recorded; 5 (a keyed create), 6 (an unkeyed create) and 7 (an update)
      // applied, then the process died before recording them.
      const outcomes = [];
      for (let index = 0; index <= 7; index++) {
        const done = await h.runtime.upserts.upsert(
          { who: alice },
          items[index] as Record<string, unknown>,
          // The version before derived every id from the plain hash: the mark it wrote with.
          before ? { jobId, index } : markOf(claimed!, index),
        );
        outcomes.push({ result: { index, ...done } });
      }
      expect(await jobs.record(claimed!, dead, outcomes.slice(0, 5), new Date(), 3_600_000)).not.toBeNull();
      expect((await getJob(jobId)).progress.processed).toBe(5);
      await h.runtime.relay.flush();

      // The next process: same store, new bus; it re-queues the unfinished job at start.
      await h.restart();
      const job = await finished(jobId);
      expect(job.state).toBe('succeeded');
      expect(job.progress).toEqual({ total: 10, processed: 10, succeeded: 10, failed: 0 });
      expect(job.results.map((r) => [r.index, r.action])).toEqual([
        [0, 'created'],
        [1, 'created'],
        [2, 'created'],
        [3, 'created'],
        [4, 'created'],
        [5, 'created'],
        [6, 'created'],
        [7, 'updated'],
        [8, 'created'],
        [9, 'created'],
      ]);
      // The rerun recognised 5, 6 and 7 and reported what the first attempt did, with the same ids.
      expect(job.results.slice(5, 8)).toEqual(outcomes.slice(5, 8).map((o) => o.result));
      expect(await total()).toBe(1 + 9);
      for (const r of job.results) expect((await listing(r.id)).version).toBe(r.action === 'created' ? 1 : 2);
      expect(await listing(existing.id)).toMatchObject({ version: 2, pricing: { listPrice: 123456 } });

      await h.runtime.relay.flush();
      const created = h.events.filter((e) => e.subject === 'listings.listing.created').map((e) => e.payload.listingId);
      const updated = h.events.filter((e) => e.subject === 'listings.listing.updated').map((e) => e.payload.listingId);
      expect(created.sort()).toEqual(
        [existing.id, ...job.results.filter((r) => r.action === 'created').map((r) => r.id)].sort(),
      );
      expect(updated).toEqual([existing.id]);
    },
  );
});
