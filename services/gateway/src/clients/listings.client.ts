import type { Identity } from '@estate/contracts/accounts';
import { problem } from '@estate/contracts/errors';
import { job, type Job } from '@estate/contracts/jobs';
import { signRequest } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';

/**
 * How the gateway reads a job on behalf of a caller. The listings service owns jobs and decides
 * who may see them: a job of another account is `job_not_found`, a role that may not read jobs is
 * `forbidden` (both thrown as AppError). Distributed: over HTTP with the signed identity;
 * embedded: a direct call into the listings service of the same process.
 */
export interface JobsReader {
  get(who: Identity, jobId: string, requestId: string): Promise<Job>;
}

/** Codes of the listings service's answers that are the caller's business, passed on as they are. */
const PASSED_ON = new Set(['job_not_found', 'forbidden']);

/** Jobs read from the listings service over HTTP, as the caller (distributed profile). */
export class ListingsClient implements JobsReader {
  constructor(private readonly options: { listingsUrl: string; signingSecret: string; timeoutMs?: number }) {}

  async get(who: Identity, jobId: string, requestId: string): Promise<Job> {
    const path = `/v1/jobs/${encodeURIComponent(jobId)}`;
    let res: Response;
    try {
      res = await fetch(`${this.options.listingsUrl}${path}`, {
        headers: {
          accept: 'application/json',
          'x-request-id': requestId,
          ...signRequest(who, { caller: 'gateway', secret: this.options.signingSecret, method: 'GET', url: path }),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      throw new AppError('bad_gateway', 'The listings service did not answer', { cause: err });
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.ok) {
      const parsed = job.safeParse(body);
      if (parsed.success) return parsed.data;
      throw new AppError('bad_gateway', 'The listings service answered with something that is not a job', {
        cause: parsed.error,
      });
    }
    const refused = problem.safeParse(body);
    if (refused.success && PASSED_ON.has(refused.data.code)) throw new AppError(refused.data.code, refused.data.detail);
    throw new AppError('bad_gateway', `The listings service answered ${res.status}`, { cause: body });
  }
}
