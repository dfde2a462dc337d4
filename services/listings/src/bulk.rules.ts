import { createHash } from 'node:crypto';
import type { EventPayload } from '@estate/contracts/events';
import type { Job, JobItemError, JobProgress, JobProgressCounts, JobState } from '@estate/contracts/jobs';
import type { AppError } from '@estate/platform/errors';
import { sortPartOf } from '@estate/platform/ids';

/** Bulk writes, and reading their jobs, are for the roles that write listings. */
export const BULK_ROLES = ['admin', 'integration'] as const;

/** Which bulk job item a write belongs to. */
export interface BulkItemMark {
  jobId: string;
  index: number;
  /** The job derives its creates' ids in insert order (`listingIds: 'ordered'` on jobs made since that scheme). */
  ordered?: boolean;
}

/** How the creates of jobs made from now on derive their listing ids (see `bulkListingId`). */
export const LISTING_IDS = 'ordered' as const;

/**
 * Bulk items remembered per listing: enough to recognise every write a crashed job had not
 * recorded yet (the worker never has more than this many items started and unrecorded).
 */
export const APPLIED_ITEMS_KEPT = 50;

/** The mark of a job's item. */
export const markOf = (job: { id: string; listingIds?: typeof LISTING_IDS }, index: number): BulkItemMark => ({
  jobId: job.id,
  index,
  ...(job.listingIds === LISTING_IDS ? { ordered: true } : {}),
});

/** How a listing remembers that a bulk item wrote it. */
export const appliedKey = (mark: BulkItemMark): string => `${mark.jobId}#${mark.index}`;

/**
 * The id a bulk item creates its listing under, derived from the job and the index: a create
 * repeated after a crash finds its own first attempt instead of making a second listing.
 * `lst_` and URL-safe characters like every listing id, and as unguessable as the job id.
 *
 * Ordered (jobs made since the scheme): the job id's time, the item's index, then a hash, so a job's creates sort in
 * the order they are written. Every index on the listing id (the store's key, the search and RESO rows) then takes
 * them at its end instead of at a random page: decision 0133. A job made before keeps the plain hash it started with.
 */
export function bulkListingId(mark: BulkItemMark): string {
  const hash = createHash('sha256')
    .update(`bulk:${appliedKey(mark)}`)
    .digest();
  const time = mark.ordered ? sortPartOf(mark.jobId) : undefined;
  if (time === undefined) return `lst_${hash.subarray(0, 12).toString('base64url')}`;
  return `lst_${time}${mark.index.toString(36).padStart(5, '0')}${hash.subarray(0, 9).toString('base64url')}`;
}

/**
 * The command that puts a job in the work queue. Its event id is fixed per job, so the outbox
 * relay and a re-queue at start de-duplicate on it (JetStream's window, the in-process bus's).
 */
export function submittedCommand(job: {
  id: string;
  accountId: string;
  createdAt: string;
}): EventPayload<'listings.bulk-job.submitted'> {
  return {
    eventId: `${job.id}:submitted`,
    accountId: job.accountId,
    jobId: job.id,
    version: 1,
    occurredAt: job.createdAt,
  };
}

/** A job's `version`: 1 while it is open (its queue command), 2 once it has ended (it ends once). */
export const ENDED_JOB_VERSION = 2;

/**
 * The event that says a job ended, written with the write that ends it. Its event id is fixed per
 * job, so however often the relay repeats it, subscribers see it once.
 */
export function completedEvent(job: Job, accountId: string): EventPayload<'listings.bulk-job.completed'> {
  return {
    eventId: `${job.id}:completed`,
    accountId,
    jobId: job.id,
    version: ENDED_JOB_VERSION,
    occurredAt: job.finishedAt ?? job.createdAt,
    job,
  };
}

/**
 * What an item must not run beside: an item naming an `id` may write any listing, so it runs
 * alone; one with a feed key waits for an earlier item with the same key; the rest (creates
 * without a key) run freely. Items start in index order, so a listing written twice by one batch
 * is written in that order.
 */
export type Lane = { kind: 'alone' } | { kind: 'key'; key: string } | { kind: 'free' };

export function laneOf(item: Record<string, unknown>): Lane {
  if (item.id !== undefined) return { kind: 'alone' };
  const { externalId, source } = item;
  return typeof externalId === 'string' && typeof source === 'string'
    ? { kind: 'key', key: `${source.trim()}|${externalId.trim()}` }
    : { kind: 'free' };
}

/** How a job ends once every item has an outcome. */
export function stateAfter(progress: Pick<JobProgressCounts, 'succeeded' | 'failed'>): JobState {
  if (progress.failed === 0) return 'succeeded';
  return progress.succeeded === 0 ? 'failed' : 'partially_failed';
}

/** What `jobs.<id>.progress` announces about a job. */
export function progressOf(job: {
  id: string;
  state: JobState;
  progress: JobProgressCounts;
  startedAt?: string;
  finishedAt?: string;
}): JobProgress {
  return {
    jobId: job.id,
    state: job.state,
    progress: job.progress,
    startedAt: job.startedAt ?? null,
    finishedAt: job.finishedAt ?? null,
  };
}

/** The item's error as the job reports it: the first offending field as `path`, every issue in `message`. */
export function itemError(index: number, item: Record<string, unknown>, err: AppError): JobItemError {
  const fields = err.extra.errors ?? [];
  const message =
    fields.length > 0 ? fields.map((f) => (f.path ? `${f.path}: ${f.message}` : f.message)).join('; ') : err.detail;
  const path =
    fields[0]?.path ||
    (err.code === 'listing_not_found' ? 'id' : err.code === 'listing_exists' ? 'externalId' : undefined);
  return {
    index,
    ...(typeof item.externalId === 'string' ? { externalId: item.externalId } : {}),
    code: err.code,
    message,
    ...(path ? { path } : {}),
  };
}
