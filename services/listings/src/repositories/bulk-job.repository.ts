import type { Role } from '@estate/contracts/accounts';
import type { Job, JobItemError, JobItemResult, JobProgressCounts, JobState, JobType } from '@estate/contracts/jobs';
import { outboxEntry, updateWithOutbox, withoutOutbox, type OutboxDoc } from '@estate/bus';
import type { FeedCursor, FeedLedger } from '@estate/contracts/feeds';
import { decodeCursor } from '@estate/platform/pagination';
import { allOf, findOwned, keyset, pageOf, type DocumentCollection, type DocumentStore } from '@estate/store';
import { completedEvent, ENDED_JOB_VERSION, type LISTING_IDS } from '../bulk.rules';

export const BULK_JOBS_COLLECTION = 'bulk_jobs';
/**
 * A job's items, apart from the job: written once, read by the worker, while the job document is
 * read and rewritten all the time (progress records, reads, the outbox relay's sweeps).
 */
export const BULK_JOB_ITEMS_COLLECTION = 'bulk_job_items';

/** Which worker is processing a job, until when (renewed as it goes; an expired lease may be taken over). */
export interface JobLease {
  owner: string;
  until: string;
}

/** A job as stored: the public record plus who submitted it and the worker's lease. */
export interface BulkJobDoc extends OutboxDoc {
  type: JobType;
  accountId: string;
  /** The worker writes with the submitter's identity. */
  submittedBy: { keyId: string; role: Role | 'platform' };
  requestId?: string;
  state: JobState;
  progress: JobProgressCounts;
  results: JobItemResult[];
  errors: JobItemError[];
  lease?: JobLease;
  /** How many times a worker took the job up (first start and every resumption). */
  attempts?: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  /** How the job's creates derive their listing ids; absent on jobs made before the ordered scheme (`bulkListingId`). */
  listingIds?: typeof LISTING_IDS;
  /** `feed_sync` jobs: the feed, the ledger, and where the walk stands (the last record applied). */
  feedId?: string;
  ledger?: FeedLedger;
  walk?: FeedCursor;
}

interface BulkJobItemsDoc {
  /** The job's id. */
  id: string;
  /** Each item as JSON text: clients' keys may contain `.` or start with `$`, which the stores refuse as field names. */
  items: string[];
}

/** How one item ended. */
export type ItemOutcome = { result: JobItemResult } | { error: JobItemError };

export function toJob(doc: BulkJobDoc): Job {
  return {
    id: doc.id,
    type: doc.type,
    state: doc.state,
    progress: doc.progress,
    results: doc.results,
    errors: doc.errors,
    createdAt: doc.createdAt,
    startedAt: doc.startedAt ?? null,
    finishedAt: doc.finishedAt ?? null,
    ...(doc.feedId ? { feedId: doc.feedId } : {}),
    ...(doc.ledger ? { ledger: ledgerOf(doc.ledger) } : {}),
  };
}

/** A run's ledger with the counts added since it was stored (a run recorded by an earlier version lacks them). */
export function ledgerOf(stored: FeedLedger): FeedLedger {
  const added = stored as Partial<FeedLedger>;
  return { ...stored, hidden: added.hidden ?? 0, entityEvents: added.entityEvents ?? null };
}

const OPEN_STATES: JobState[] = ['queued', 'running'];

/**
 * Bulk jobs. Every write a worker makes is conditional on holding the job's lease, and a record of
 * items also on the job being where the worker left it (`progress.processed`), so an item is
 * recorded once however many workers a redelivery brings.
 */
export class BulkJobRepository {
  private constructor(
    readonly collection: DocumentCollection<BulkJobDoc>,
    private readonly itemsCollection: DocumentCollection<BulkJobItemsDoc>,
  ) {}

  static async open(store: DocumentStore): Promise<BulkJobRepository> {
    const col = await store.collection<BulkJobDoc>(BULK_JOBS_COLLECTION, [
      { fields: { _outboxPending: 1 } },
      { fields: { state: 1 } },
      { fields: { accountId: 1, createdAt: 1 } },
      { fields: { feedId: 1, createdAt: 1 } },
    ]);
    return new BulkJobRepository(col, await store.collection<BulkJobItemsDoc>(BULK_JOB_ITEMS_COLLECTION));
  }

  /**
   * Stores the items, then the job (which carries its queue command): a job never exists without
   * its items; a crash in between leaves only an items document nothing refers to.
   */
  async insert(doc: BulkJobDoc, items: unknown[]): Promise<void> {
    await this.itemsCollection.insertOne({ id: doc.id, items: items.map((item) => JSON.stringify(item)) });
    await this.collection.insertOne(doc);
  }

  async items(jobId: string): Promise<Record<string, unknown>[] | null> {
    const doc = await this.itemsCollection.findOne({ id: jobId });
    return doc ? doc.items.map((item) => JSON.parse(item) as Record<string, unknown>) : null;
  }

  /** The public record, or null when the job does not exist in this account. */
  async get(accountId: string, id: string): Promise<Job | null> {
    const doc = await findOwned(this.collection, id, accountId);
    return doc ? toJob(doc) : null;
  }

  async load(id: string): Promise<BulkJobDoc | null> {
    const doc = await this.collection.findOne({ id });
    return doc ? (withoutOutbox(doc) as BulkJobDoc) : null;
  }

  /** Takes an open job for `owner` (counting the attempt) unless another worker holds a live lease on it. */
  async claim(id: string, owner: string, now: Date, leaseMs: number, firstStart: boolean): Promise<BulkJobDoc | null> {
    const at = now.toISOString();
    return this.collection.updateOne(
      {
        id,
        state: { $in: OPEN_STATES },
        $or: [{ lease: { $exists: false } }, { 'lease.until': { $lt: at } }, { 'lease.owner': owner }],
      },
      {
        $set: {
          state: 'running',
          lease: { owner, until: leaseUntil(now, leaseMs) },
          ...(firstStart ? { startedAt: at } : {}),
        },
        $inc: { attempts: 1 },
      },
    );
  }

  /** Extends the lease; false when the job is no longer this owner's. */
  async renew(id: string, owner: string, now: Date, leaseMs: number): Promise<boolean> {
    return (
      (await this.collection.updateOne(
        { id, state: 'running', 'lease.owner': owner },
        { $set: { 'lease.until': leaseUntil(now, leaseMs) } },
      )) !== null
    );
  }

  /**
   * Records the outcomes of the items that follow the ones `job` has recorded, and extends the
   * lease; null when the stored job is no longer at that point or no longer this owner's.
   */
  async record(
    job: BulkJobDoc,
    owner: string,
    outcomes: ItemOutcome[],
    now: Date,
    leaseMs: number,
  ): Promise<BulkJobDoc | null> {
    const results = [...job.results];
    const errors = [...job.errors];
    for (const o of outcomes) {
      if ('result' in o) results.push(o.result);
      else errors.push(o.error);
    }
    const progress = {
      total: job.progress.total,
      processed: job.progress.processed + outcomes.length,
      succeeded: job.progress.succeeded + results.length - job.results.length,
      failed: job.progress.failed + errors.length - job.errors.length,
    };
    return this.collection.updateOne(
      { id: job.id, state: 'running', 'lease.owner': owner, 'progress.processed': job.progress.processed },
      { $set: { progress, results, errors, 'lease.until': leaseUntil(now, leaseMs) } },
    );
  }

  /**
   * Ends a job this owner holds, where `job` left it, with the event that says so (`job.completed`
   * for clients) in the same write: the relay publishes it, also after a crash right after this write.
   */
  async finish(job: BulkJobDoc, owner: string, state: JobState, now: Date): Promise<BulkJobDoc | null> {
    return this.end(job, owner, { ...toJob(job), state, finishedAt: now.toISOString() });
  }

  /** Fails every item from `processed` on at once and ends the job (a job that kept failing for reasons of its own). */
  async abandon(
    job: BulkJobDoc,
    owner: string,
    errors: JobItemError[],
    state: JobState,
    now: Date,
  ): Promise<BulkJobDoc | null> {
    return this.end(job, owner, {
      ...toJob(job),
      errors: [...job.errors, ...errors],
      progress: { ...job.progress, processed: job.progress.total, failed: job.progress.failed + errors.length },
      state,
      finishedAt: now.toISOString(),
    });
  }

  private end(job: BulkJobDoc, owner: string, ended: Job): Promise<BulkJobDoc | null> {
    const event = outboxEntry('listings.bulk-job.completed', completedEvent(ended, job.accountId), job.requestId);
    return this.collection.updateOne(
      { id: job.id, state: 'running', 'lease.owner': owner, 'progress.processed': job.progress.processed },
      updateWithOutbox(
        {
          $set: {
            state: ended.state,
            progress: ended.progress,
            errors: ended.errors,
            finishedAt: ended.finishedAt,
            ...(ended.ledger ? { ledger: ended.ledger } : {}),
            // The relay clears an entry only at the version it read: a job's two events never mix.
            version: ENDED_JOB_VERSION,
          },
          $unset: { lease: true },
        },
        event,
      ),
    );
  }

  /** Gives the job up so another worker may take it at once instead of waiting for the lease to expire. */
  async release(id: string, owner: string): Promise<void> {
    await this.collection.updateOne({ id, 'lease.owner': owner }, { $unset: { lease: true } });
  }

  /** Drops every lease: only for a process that knows it is the sole worker (the embedded profile at start). */
  async releaseAll(): Promise<number> {
    return this.collection.updateMany(
      { state: { $in: OPEN_STATES }, lease: { $exists: true } },
      { $unset: { lease: true } },
    );
  }

  /** Open bulk upserts (feed runs are taken up by their own worker). */
  async unfinished(): Promise<BulkJobDoc[]> {
    return this.collection.find(
      { state: { $in: OPEN_STATES }, type: 'listings.bulk_upsert' },
      { sort: { createdAt: 1 } },
    );
  }

  /** Stores a feed run (it carries no items and no queue command: feed runs are found by their worker). */
  async insertRun(doc: BulkJobDoc): Promise<void> {
    await this.collection.insertOne(doc);
  }

  /** Open feed runs no live lease holds, oldest first. */
  claimableRuns(now: Date, limit: number): Promise<BulkJobDoc[]> {
    return this.collection.find(
      {
        type: 'feed_sync',
        state: { $in: OPEN_STATES },
        $or: [{ lease: { $exists: false } }, { 'lease.until': { $lt: now.toISOString() } }],
      },
      { sort: { createdAt: 1 }, limit },
    );
  }

  /** A feed's runs, newest first. */
  async runsOf(
    accountId: string,
    feedId: string,
    query: { limit: number; cursor?: string },
  ): Promise<{ items: Job[]; nextCursor: string | null; total: number }> {
    const order = { field: 'createdAt', direction: -1 } as const;
    const { sort, after } = keyset(order, decodeCursor(query.cursor, `${accountId}|${feedId}`));
    const scope = { accountId, feedId };
    const [fetched, total] = await Promise.all([
      this.collection.find(allOf([scope, after]), { sort, limit: query.limit + 1 }),
      this.collection.count(scope),
    ]);
    const page = pageOf(fetched, query.limit, order, `${accountId}|${feedId}`);
    return { items: page.items.map(toJob), nextCursor: page.nextCursor, total };
  }

  /**
   * Records a page of a feed run where `job` left it (`progress.processed`), under this owner's lease, and extends
   * the lease; null when the stored run is no longer at that point or no longer this owner's.
   */
  recordRun(
    job: BulkJobDoc,
    owner: string,
    change: Pick<BulkJobDoc, 'progress' | 'errors' | 'ledger' | 'walk'>,
    now: Date,
    leaseMs: number,
  ): Promise<BulkJobDoc | null> {
    return this.collection.updateOne(
      { id: job.id, state: 'running', 'lease.owner': owner, 'progress.processed': job.progress.processed },
      { $set: { ...change, 'lease.until': leaseUntil(now, leaseMs) } },
    );
  }
}

function leaseUntil(now: Date, leaseMs: number): string {
  return new Date(now.getTime() + leaseMs).toISOString();
}
