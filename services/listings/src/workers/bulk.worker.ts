import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Identity } from '@estate/contracts/accounts';
import type { EventPayload } from '@estate/contracts/events';
import { jobProgressSubject, type JobItemError, type JobState } from '@estate/contracts/jobs';
import { RetryLater, Unprocessable, type Bus, type OutboxRelay, type Subscription, type UnitOfWork } from '@estate/bus';
import type { RequestContext } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import type { Logger } from 'pino';
import {
  APPLIED_ITEMS_KEPT,
  itemError,
  laneOf,
  markOf,
  progressOf,
  stateAfter,
  submittedCommand,
  type BulkItemMark,
} from '../bulk.rules';
import type { ListingUpsertService } from '../listing-upsert.service';
import type { BulkJobDoc, BulkJobRepository, ItemOutcome } from '../repositories/bulk-job.repository';
import { metrics } from '@estate/platform/metrics';

export interface BulkWorkerDeps {
  jobs: BulkJobRepository;
  upserts: Pick<ListingUpsertService, 'upsert'>;
  bus: Bus;
  clock: () => Date;
  log: Logger;
  /** The relay of the jobs' outbox: asked to publish a job's completion as soon as it is written. */
  outbox?: Pick<OutboxRelay, 'kick'>;
  /** How long a job stays this worker's without a sign of life (renewed every third of it). */
  leaseMs?: number;
  /** JetStream ack wait of a job delivery (kept alive while the job runs). */
  ackWaitMs?: number;
  /**
   * How a group of items and the job's record of them are written: one commit where the store has
   * transactions, so a crash re-runs none that counted and loses none (docs/decisions/0126-unit-of-work.md).
   */
  units: UnitOfWork;
}

/** Every listings replica subscribes under this name: together they are one work-queue consumer. */
export const BULK_WORKERS_DURABLE = 'listings-bulk-workers';
/** A worker that dies is noticed within this (ack wait) and its lease lapses within the lease time. */
const DEFAULT_ACK_WAIT_MS = 10_000;
const DEFAULT_LEASE_MS = 10_000;
/**
 * Deliveries are not how a job gives up: one that waits for another worker's lease, or passes
 * through a deployment that shares the NATS server, is no failure. Attempts on the job are.
 */
const MAX_DELIVER = 1000;
/** A job taken up this many times without ending (its worker crashing, or failing on it) has its remaining items failed. */
const MAX_ATTEMPTS = 8;
/** A queued command whose job no store of ours has is given this long to reach its own deployment, then dropped. */
const FOREIGN_GRACE_MS = 10 * 60 * 1000;
/** Items of one job applied at once: a store's round trips overlap, as concurrent single writes' do. */
const ITEMS_IN_FLIGHT = 8;
/**
 * Items applied in one unit of work with the job's record of them. Where a unit is not one commit, a crash re-runs
 * the items of a unit; each listing remembers the last bulk items applied to it (see `ListingUpsertService`),
 * which must cover them all.
 */
const ITEMS_PER_UNIT = APPLIED_ITEMS_KEPT;

/**
 * Runs bulk jobs from the `listings.bulk-job.submitted` work queue, one at a time per replica.
 * A job is processed under a lease, a few items at once (in order where they touch the same
 * listing); outcomes are recorded on the job in item order as it goes and announced on
 * `jobs.<id>.progress`. A delivery is acknowledged only once its job has
 * ended, so a job whose worker dies is redelivered and resumed after its last recorded item; an
 * item written but not yet recorded is recognised by the listing it wrote (see `ListingUpsertService`).
 */
export class BulkWorker {
  /** Identifies this worker in leases and logs. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private subscription?: Subscription;
  private stopping = false;
  private readonly leaseMs: number;

  constructor(private readonly deps: BulkWorkerDeps) {
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.subscription = await this.deps.bus.subscribe(
      ['listings.bulk-job.submitted'],
      {
        durable: BULK_WORKERS_DURABLE,
        ackWaitMs: this.deps.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
        maxDeliver: MAX_DELIVER,
        prefetch: 1,
      },
      (message) => this.run(message.payload, message.deliveryCount),
    );
  }

  /** Stops taking jobs; a job in progress stops after its current item and goes back to the queue. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.subscription?.stop();
    this.subscription = undefined;
  }

  /**
   * Puts every unfinished job back in the queue and drops the leases of the previous run. Only
   * for a queue that does not outlive the process (the in-process bus), whose process is the
   * only worker: JetStream keeps unacknowledged jobs by itself.
   */
  async requeueUnfinished(): Promise<number> {
    await this.deps.jobs.releaseAll();
    const open = await this.deps.jobs.unfinished();
    for (const job of open) {
      const command = submittedCommand(job);
      await this.deps.bus.publish('listings.bulk-job.submitted', command, {
        msgId: command.eventId,
        requestId: job.requestId,
      });
    }
    if (open.length > 0) this.deps.log.info({ jobs: open.length }, 'unfinished bulk jobs re-queued');
    return open.length;
  }

  /** Handles one delivery of a job; resolves (acknowledges) only when the job has ended. */
  async run(command: EventPayload<'listings.bulk-job.submitted'>, deliveryCount: number): Promise<void> {
    const { jobId } = command;
    const job = await this.deps.jobs.load(jobId);
    if (!job) {
      // A job is stored before its command is queued, so this command belongs to another deployment
      // sharing the NATS server: hand it back for one of its own workers rather than drop it.
      if (this.deps.clock().getTime() - Date.parse(command.occurredAt) > FOREIGN_GRACE_MS) {
        throw new Unprocessable(`bulk job ${jobId} is in no store this command reached; dropping it`);
      }
      throw new RetryLater(`bulk job ${jobId} is not in this service's store`, 1000);
    }
    if (job.state !== 'queued' && job.state !== 'running') return;
    const claimed = await this.deps.jobs.claim(jobId, this.owner, this.deps.clock(), this.leaseMs, !job.startedAt);
    if (!claimed) {
      const held = await this.deps.jobs.load(jobId);
      if (!held || (held.state !== 'queued' && held.state !== 'running')) return;
      // Another worker holds it (this is a redelivery): come back when its lease would have lapsed.
      const wait = held.lease ? Date.parse(held.lease.until) - this.deps.clock().getTime() : 0;
      throw new RetryLater(
        `bulk job ${jobId} is held by ${held.lease?.owner ?? 'another worker'}`,
        Math.max(250, wait + 250),
      );
    }
    const log = this.deps.log.child({ jobId, requestId: claimed.requestId });
    const attempt = claimed.attempts ?? 1;
    if (attempt > MAX_ATTEMPTS) {
      await this.abandon(claimed, `taken up ${attempt} times without ending`, log);
      return;
    }
    const items = await this.deps.jobs.items(jobId);
    if (!items || items.length !== claimed.progress.total) {
      await this.abandon(claimed, 'its items are missing from the store', log);
      return;
    }
    log.info(
      { from: claimed.progress.processed, total: claimed.progress.total, attempt, deliveryCount, worker: this.owner },
      claimed.progress.processed > 0 || attempt > 1 ? 'bulk job resumed' : 'bulk job started',
    );

    let leaseLost = false;
    const renewal = setInterval(
      () => {
        this.deps.jobs.renew(jobId, this.owner, this.deps.clock(), this.leaseMs).then(
          (held) => (leaseLost ||= !held),
          (err: unknown) => log.warn({ err }, 'bulk job lease renewal failed'),
        );
      },
      Math.max(100, Math.floor(this.leaseMs / 3)),
    );
    try {
      await this.process(claimed, items, () => leaseLost);
      await this.end(claimed.id, log);
    } catch (err) {
      if (err instanceof RetryLater) throw err;
      // Let any replica retry at once rather than after the lease (the bus backs off).
      await this.deps.jobs.release(jobId, this.owner).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * Applies the items in units of ITEMS_PER_UNIT, one unit after another, each with the job's record of its items
   * (and announced): after a crash the job resumes after the last unit recorded.
   */
  private async process(
    claimed: BulkJobDoc,
    items: Record<string, unknown>[],
    leaseLost: () => boolean,
  ): Promise<void> {
    const ctx = contextOf(claimed);
    let job = claimed;
    this.announce(job);
    while (job.progress.processed < job.progress.total && !this.stopping) {
      if (leaseLost()) throw new RetryLater(`bulk job ${job.id}: lease lost`, this.leaseMs);
      const from = job.progress.processed;
      const to = Math.min(job.progress.total, from + ITEMS_PER_UNIT);
      job = await this.deps.units.run(async () => {
        const outcomes = await this.applyAll(ctx, job, items, from, to);
        const recorded = await this.deps.jobs.record(job, this.owner, outcomes, this.deps.clock(), this.leaseMs);
        // Throwing undoes what the unit can: the worker that took the job over applies the items.
        if (!recorded) throw new RetryLater(`bulk job ${job.id}: taken over at item ${from}`, this.leaseMs);
        return recorded;
      });
      this.announce(job);
    }
  }

  /** Applies items `from` to `to` a few at once, in order where they touch the same listing; outcomes in item order. */
  private async applyAll(
    ctx: RequestContext,
    job: Pick<BulkJobDoc, 'id' | 'listingIds'>,
    items: Record<string, unknown>[],
    from: number,
    to: number,
  ): Promise<ItemOutcome[]> {
    const outcomes: ItemOutcome[] = [];
    const running = new Set<Promise<void>>();
    const keysInFlight = new Set<string>();
    let aloneInFlight = false;
    let failure: unknown;
    const canStart = (index: number): boolean => {
      if (running.size >= ITEMS_IN_FLIGHT || aloneInFlight) return false;
      const lane = laneOf(items[index]);
      if (lane.kind === 'alone') return running.size === 0;
      return lane.kind === 'free' || !keysInFlight.has(lane.key);
    };
    for (let next = from; next < to || running.size > 0;) {
      while (failure === undefined && next < to && canStart(next)) {
        const index = next++;
        const lane = laneOf(items[index]);
        if (lane.kind === 'alone') aloneInFlight = true;
        if (lane.kind === 'key') keysInFlight.add(lane.key);
        const applying: Promise<void> = this.apply(ctx, items[index], markOf(job, index))
          .then(
            (outcome) => void (outcomes[index - from] = outcome),
            (err: unknown) => void (failure ??= err),
          )
          .finally(() => {
            running.delete(applying);
            if (lane.kind === 'alone') aloneInFlight = false;
            if (lane.kind === 'key') keysInFlight.delete(lane.key);
          });
        running.add(applying);
      }
      if (running.size === 0) break;
      await Promise.race(running);
    }
    if (failure !== undefined) throw failure;
    return outcomes;
  }

  /** Ends the job once every item is recorded, or hands it back when the worker stops first. */
  private async end(jobId: string, log: Logger): Promise<void> {
    const job = await this.deps.jobs.load(jobId);
    if (!job || job.lease?.owner !== this.owner || job.state !== 'running') {
      throw new RetryLater(`bulk job ${jobId}: taken over before it could finish`, this.leaseMs);
    }
    if (job.progress.processed < job.progress.total) {
      await this.deps.jobs.release(jobId, this.owner);
      log.info({ at: job.progress.processed }, 'bulk job handed back: the worker is stopping');
      throw new RetryLater('worker stopping; job handed back', 0);
    }
    const finished = await this.deps.jobs.finish(job, this.owner, stateAfter(job.progress), this.deps.clock());
    if (!finished) throw new RetryLater(`bulk job ${jobId}: taken over before it could finish`, this.leaseMs);
    this.deps.outbox?.kick();
    this.announce(finished);
    this.count(finished);
    log.info({ state: finished.state, ...finished.progress }, 'bulk job finished');
  }

  private async apply(ctx: RequestContext, item: Record<string, unknown>, mark: BulkItemMark): Promise<ItemOutcome> {
    try {
      const done = await this.deps.upserts.upsert(ctx, item, mark);
      return { result: { index: mark.index, id: done.id, action: done.action } };
    } catch (err) {
      // The item's own problem; anything else (store down...) fails the delivery and is retried.
      if (err instanceof AppError && err.status < 500) return { error: itemError(mark.index, item, err) };
      throw err;
    }
  }

  /** A job that cannot go on (taken up too often, or broken): its remaining items are reported failed and it ends. */
  private async abandon(job: BulkJobDoc, reason: string, log: Logger): Promise<void> {
    log.error(
      { attempts: job.attempts, at: job.progress.processed, reason },
      'bulk job abandoned; failing its remaining items',
    );
    const errors: JobItemError[] = [];
    for (let index = job.progress.processed; index < job.progress.total; index++) {
      errors.push({
        index,
        code: 'internal_error',
        message: 'The item could not be processed; the request id identifies the failure in our logs',
      });
    }
    const state: JobState = job.progress.succeeded === 0 ? 'failed' : 'partially_failed';
    const ended = await this.deps.jobs.abandon(job, this.owner, errors, state, this.deps.clock());
    if (ended) {
      this.deps.outbox?.kick();
      this.announce(ended);
      this.count(ended);
    }
  }

  private count(job: BulkJobDoc): void {
    metrics.jobsFinished.inc({ type: job.type, state: job.state });
    if (job.startedAt && job.finishedAt)
      metrics.jobDuration.observe(
        { type: job.type, state: job.state },
        (Date.parse(job.finishedAt) - Date.parse(job.startedAt)) / 1000,
      );
  }

  private announce(job: BulkJobDoc): void {
    this.deps.bus.notify(jobProgressSubject(job.id), progressOf(job), { requestId: job.requestId });
  }
}

/** Items run as the key that submitted the job. */
function contextOf(job: BulkJobDoc): RequestContext {
  const who: Identity = {
    accountId: job.accountId,
    keyId: job.submittedBy.keyId,
    role: job.submittedBy.role,
    agentId: null,
  };
  return { who, requestId: job.requestId };
}
