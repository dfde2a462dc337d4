import { z } from 'zod';
import { errorCodes } from './errors';
import { examples } from './examples';
import { feedLedger } from './feeds';

/** Most items one bulk call may carry; more is 422 `bulk_limit_exceeded`. */
export const BULK_MAX_ITEMS = 100;

export const jobStates = ['queued', 'running', 'succeeded', 'partially_failed', 'failed'] as const;
export const jobState = z.enum(jobStates);
export type JobState = z.infer<typeof jobState>;

/** States a job never leaves. */
export const finalJobStates: readonly JobState[] = ['succeeded', 'partially_failed', 'failed'];
export const isFinalJobState = (state: JobState): boolean => finalJobStates.includes(state);

export const jobTypes = ['listings.bulk_upsert', 'feed_sync'] as const;
export const jobType = z.enum(jobTypes);
export type JobType = z.infer<typeof jobType>;

/**
 * The bulk body. Items are only required to be JSON objects here: each is validated on its own by
 * the worker, so one bad item fails alone instead of refusing the whole batch.
 */
export const bulkListingsRequest = z
  .strictObject({
    listings: z
      .array(
        z
          .record(z.string(), z.unknown())
          .describe(
            'A listing as for `POST /v1/listings`. With `id` (a listing of the account) or a known `externalId` + `source` it is a JSON merge patch of that listing; otherwise it is created.',
          ),
      )
      .min(1)
      .describe(`1 to ${BULK_MAX_ITEMS} listings`),
  })
  .meta({ id: 'BulkListingsRequest', examples: [examples.bulkListingsRequest] });
export type BulkListingsRequest = z.infer<typeof bulkListingsRequest>;

export const bulkAccepted = z.object({ jobId: z.string(), state: z.literal('queued') }).meta({ id: 'BulkAccepted' });
export type BulkAccepted = z.infer<typeof bulkAccepted>;

export const jobProgressCounts = z.object({
  total: z.number().int(),
  processed: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
});
export type JobProgressCounts = z.infer<typeof jobProgressCounts>;

export const jobItemActions = ['created', 'updated'] as const;
export const jobItemResult = z.object({ index: z.number().int(), id: z.string(), action: z.enum(jobItemActions) });
export type JobItemResult = z.infer<typeof jobItemResult>;

export const jobItemError = z.object({
  index: z.number().int(),
  externalId: z.string().optional(),
  code: z.enum(errorCodes),
  message: z.string(),
  path: z.string().optional().describe('The offending field inside the item, e.g. `pricing.listPrice`'),
});
export type JobItemError = z.infer<typeof jobItemError>;

export const job = z
  .object({
    id: z.string(),
    type: jobType,
    state: jobState,
    progress: jobProgressCounts,
    results: z.array(jobItemResult).describe('Items applied, in item order'),
    errors: z.array(jobItemError).describe('Items refused, in item order'),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    feedId: z.string().optional().describe('`feed_sync` jobs: the feed run'),
    ledger: feedLedger.optional().describe('`feed_sync` jobs: the sync ledger (results are counted here, not listed)'),
  })
  .meta({ id: 'Job' });
export type Job = z.infer<typeof job>;

/**
 * What `jobs.<jobId>.progress` notifications carry and what `GET /v1/jobs/:id/events` streams:
 * the job without its per-item lists (those are on `GET /v1/jobs/:id`).
 */
export const jobProgress = z
  .object({
    jobId: z.string(),
    state: jobState,
    progress: jobProgressCounts,
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: 'JobProgress' });
export type JobProgress = z.infer<typeof jobProgress>;

export function jobProgressOf(j: Job): JobProgress {
  return { jobId: j.id, state: j.state, progress: j.progress, startedAt: j.startedAt, finishedAt: j.finishedAt };
}

/** Transient (core NATS) subject of a job's progress notifications. */
export function jobProgressSubject(jobId: string): string {
  return `jobs.${jobId}.progress`;
}
