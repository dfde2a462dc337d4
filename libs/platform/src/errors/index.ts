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
  /** A union's: what each of its options found. */
  errors?: IssueLike[][];
}

/** zod's message for a union none of whose options matched, when the union names no rule of its own. */
const ZOD_UNION_MESSAGE = 'Invalid input';

const issueKey = (i: IssueLike) => JSON.stringify([i.code, i.path.map(String), i.message, i.keys ?? null]);

/** The issues every option of a union found: the faults whichever option the body meant. */
function commonToEveryOption(options: readonly IssueLike[][]): IssueLike[] {
  const [first, ...rest] = options;
  const others = rest.map((issues) => new Set(issues.map(issueKey)));
  return first.filter((issue) => others.every((keys) => keys.has(issueKey(issue))));
}

/**
 * Every zod issue as `{ path, message }`, one entry per unknown key, read-only fields named as such. A body that
 * matches no option of a union (a cross-field rule: `oneOf` in the document) gets the faults all options agree on
 * or, when they agree on none, the union's own message (which says the rule), or else the first option's faults.
 */
export function fieldErrors(issues: readonly IssueLike[], prefix: PropertyKey[] = []): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) {
    const base = [...prefix, ...issue.path].map(String);
    const options = issue.code === 'invalid_union' && issue.errors?.length ? issue.errors : undefined;
    const common = options ? commonToEveryOption(options) : [];
    if (common.length > 0) {
      out.push(...fieldErrors(common, base));
    } else if (options && issue.message === ZOD_UNION_MESSAGE) {
      // A union without a message of its own: its first option says what is missing.
      out.push(...fieldErrors(options[0], base));
    } else if (issue.code === 'unrecognized_keys' && issue.keys) {
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
