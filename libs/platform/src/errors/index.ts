import { errorStatus, errorTitles, type ErrorCode, type FieldError } from '@estate/contracts/errors';
import type { z } from 'zod';

/** The one error type services throw; the HTTP error handler turns it into problem+json. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      fields?: Record<string, unknown>;
      cause?: unknown;
    } = {},
  ) {
    super(detail, { cause: extra.cause });
    this.name = 'AppError';
    this.status = errorStatus[code];
  }

  get title(): string {
    return errorTitles[this.code];
  }
}

/** Seconds a client is told to wait (`Retry-After`) when an engine is away: outages we ride out are short. */
export const DEPENDENCY_RETRY_AFTER_S = 2;

/**
 * An engine (store, bus, search index) this request needs does not answer: 503 `dependency_unavailable` with
 * `Retry-After`, and nothing half-done (the write either reached the engine or did not). The detail names the
 * dependency only; the engine's own error stays in `cause`, for the log.
 */
export class DependencyUnavailable extends AppError {
  constructor(
    readonly dependency: string,
    cause?: unknown,
  ) {
    super('dependency_unavailable', `The ${dependency} is unavailable for a moment; retry shortly`, {
      cause,
      headers: { 'retry-after': String(DEPENDENCY_RETRY_AFTER_S) },
    });
    this.name = 'DependencyUnavailable';
  }
}

/** Fields a client may read but never write; naming them in a body gets a precise message. */
export const readOnlyFields = new Set([
  'id',
  'accountId',
  'version',
  'createdAt',
  'updatedAt',
  'media',
  'pricePerArea',
  'scoreSource',
  'scoreBreakdown',
  'lastActivityAt',
  'duplicate',
  'assignment',
]);

interface IssueLike {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
}

/** Every zod issue as `{ path, message }`, one entry per unknown key, read-only fields named as such. */
export function fieldErrors(issues: readonly IssueLike[], prefix: PropertyKey[] = []): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) {
    const base = [...prefix, ...issue.path].map(String);
    if (issue.code === 'unrecognized_keys' && issue.keys) {
      for (const key of issue.keys) {
        out.push({
          path: [...base, key].join('.'),
          message: readOnlyFields.has(key) ? 'is read-only and cannot be written' : 'is not a known field',
        });
      }
    } else {
      out.push({ path: base.join('.'), message: issue.message });
    }
  }
  return out;
}

export function validationError(
  error: z.ZodError,
  prefix: PropertyKey[] = [],
  detail = 'The request is not valid',
): AppError {
  return new AppError('validation_failed', detail, { errors: fieldErrors(error.issues as IssueLike[], prefix) });
}

export const notFound = (code: Extract<ErrorCode, `${string}_not_found`>, what: string, id: string) =>
  new AppError(code, `${what} ${id} does not exist`);
