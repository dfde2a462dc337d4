import { randomBytes } from 'node:crypto';
import type { Identity } from '@estate/contracts/accounts';
import type { EventPayload } from '@estate/contracts/events';
import { BULK_MAX_ITEMS, type BulkAccepted, type BulkListingsRequest, type Job } from '@estate/contracts/jobs';
import { outboxEntry, withOutbox, type OutboxRelay } from '@estate/bus';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import type { Logger } from 'pino';
import type { WriteContext } from '../listings.service';
import type { BulkJobDoc, BulkJobRepository } from './bulk-job.repository';

export interface BulkDeps {
  jobs: BulkJobRepository;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

/** Bulk writes, and reading their jobs, are for the roles that write listings. */
export const BULK_ROLES = ['admin', 'integration'] as const;

export function newJobId(): string {
  return `job_${randomBytes(16).toString('base64url')}`;
}

/**
 * The command that puts a job in the work queue. Its event id is fixed per job, so the outbox
 * relay and a re-queue at start de-duplicate on it (JetStream's window, the in-process bus's).
 */
export function submittedCommand(job: Pick<BulkJobDoc, 'id' | 'accountId' | 'createdAt'>): EventPayload<'listings.bulk-job.submitted'> {
  return { eventId: `${job.id}:submitted`, accountId: job.accountId, jobId: job.id, version: 1, occurredAt: job.createdAt };
}

/** Taking bulk calls: the job is stored with its queue command in the same write, then answered 202. */
export class BulkService {
  constructor(private readonly deps: BulkDeps) {}

  async submit(ctx: WriteContext, body: BulkListingsRequest): Promise<BulkAccepted> {
    assertRole(ctx.who, BULK_ROLES, 'submit bulk writes');
    const total = body.listings.length;
    if (total > BULK_MAX_ITEMS) {
      throw new AppError('bulk_limit_exceeded', `A bulk call takes at most ${BULK_MAX_ITEMS} listings; this one has ${total}`, {
        errors: [{ path: 'listings', message: `has ${total} items; at most ${BULK_MAX_ITEMS} are allowed` }],
      });
    }
    const id = newJobId();
    const now = this.deps.clock().toISOString();
    const command = submittedCommand({ id, accountId: ctx.who.accountId, createdAt: now });
    const job: BulkJobDoc = {
      id,
      type: 'listings.bulk_upsert',
      accountId: ctx.who.accountId,
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
