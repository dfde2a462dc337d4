import type { Identity } from '@estate/contracts/accounts';
import { BULK_MAX_ITEMS, type BulkAccepted, type BulkListingsRequest, type Job } from '@estate/contracts/jobs';
import { outboxEntry, withOutbox, type OutboxRelay } from '@estate/bus';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import type { Logger } from 'pino';
import { BULK_ROLES, LISTING_IDS, submittedCommand } from './bulk.rules';
import type { BulkJobDoc, BulkJobRepository } from './repositories/bulk-job.repository';
import { metrics } from '@estate/platform/metrics';

export interface BulkDeps {
  jobs: BulkJobRepository;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

/** Taking bulk calls: the job is stored with its queue command in the same write, then answered 202. */
export class BulkService {
  constructor(private readonly deps: BulkDeps) {}

  async submit(ctx: RequestContext, body: BulkListingsRequest): Promise<BulkAccepted> {
    assertRole(ctx.who, BULK_ROLES, 'submit bulk writes');
    const total = body.listings.length;
    if (total > BULK_MAX_ITEMS) {
      throw new AppError(
        'bulk_limit_exceeded',
        `A bulk call takes at most ${BULK_MAX_ITEMS} listings; this one has ${total}`,
        {
          errors: [{ path: 'listings', message: `has ${total} items; at most ${BULK_MAX_ITEMS} are allowed` }],
        },
      );
    }
    const id = newId('job');
    const now = this.deps.clock().toISOString();
    const command = submittedCommand({ id, accountId: ctx.who.accountId, createdAt: now });
    const job: BulkJobDoc = {
      id,
      type: 'listings.bulk_upsert',
      accountId: ctx.who.accountId,
      listingIds: LISTING_IDS,
      submittedBy: { keyId: ctx.who.keyId, role: ctx.who.role },
      ...(ctx.requestId ? { requestId: ctx.requestId } : {}),
      state: 'queued',
      progress: { total, processed: 0, succeeded: 0, failed: 0 },
      results: [],
      errors: [],
      createdAt: now,
      version: 1,
      // Queued through the outbox: a crash right after this write still gets the job to a worker.
      ...withOutbox(outboxEntry('listings.bulk-job.submitted', command, ctx.requestId)),
    };
    await this.deps.jobs.insert(job, body.listings);
    this.deps.outbox.kick();
    metrics.jobsSubmitted.inc({ type: job.type });
    this.deps.log.info({ jobId: id, items: total, requestId: ctx.requestId }, 'bulk job queued');
    return { jobId: id, state: 'queued' };
  }

  async get(who: Identity, id: string): Promise<Job> {
    assertRole(who, BULK_ROLES, 'read bulk jobs');
    const found = await this.deps.jobs.get(who.accountId, id);
    if (!found) throw notFound('job_not_found', 'Job', id);
    return found;
  }
}
