import type { Listing } from '@estate/contracts/listings';
import type { RequestContext } from '@estate/platform/auth';
import type { Usage } from '../feed-sync.rules';
import type { BulkJobDoc } from '../repositories/bulk-job.repository';
import type { FeedDoc } from '../repositories/feed.repository';

// What one feed run holds while it goes, and how it ends early: shared by the run worker and its removals.

/** The walk has to start again from the position it reached (its nextLink expired or was refused). */
export class WalkBroken extends Error {}
/** The run stops before the end of the feed, for a reason the ledger gives; what it applied stays. */
export class RunStopped extends Error {
  constructor(
    readonly reason: string,
    readonly sourceFailed: boolean,
    /** The source asked not to be called before this time (a long Retry-After). */
    readonly retryAt?: Date,
  ) {
    super(reason);
  }
}
/** The quarantine mark a run puts on a listing it finds gone (or flagged) for the first time. */
export function firstMark(
  state: Running,
  since: string,
  reason: 'missing' | 'hidden',
): NonNullable<Listing['sourceMissing']> {
  return { feedId: state.feed.id, since, runs: 1, runId: state.job.id, reason };
}
/** This worker no longer holds the run (lease lost, or stopping): another one goes on from the recorded page. */
export class RunHandedBack extends Error {}

export interface Running {
  job: BulkJobDoc;
  feed: FeedDoc;
  ctx: RequestContext;
  usage: Usage;
  token?: string;
  /** When the previous request's answer (or failure) came back. */
  lastRequestAt: number;
  leaseLost: boolean;
}
