import { createHash } from 'node:crypto';
import { AppError } from '@estate/platform/errors';
import type { IdempotencyDoc, KeptAnswer } from './repositories/idempotency.repository';

/** How long a first answer is kept for replay. */
export const KEEP_MS = 24 * 60 * 60 * 1000;
/** A first request still "running" after this long is taken to have died with its process. */
export const STALE_RUNNING_MS = 5 * 60 * 1000;

export function assertIdempotencyKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
    throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 characters', {
      errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
    });
  }
}

/** A key is scoped to the API key that sent it, the method and the path. */
export function recordIdOf(request: { keyId: string; method: string; path: string; key: string }): string {
  return createHash('sha256')
    .update(`${request.keyId}\n${request.method}\n${request.path}\n${request.key}`)
    .digest('hex');
}

/** What tells a retry from another request under the same key: the body's bytes. */
export function fingerprintOf(body: unknown): string {
  const bytes = Buffer.isBuffer(body)
    ? body
    : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body ?? null));
  return createHash('sha256').update(bytes).digest('hex');
}

export type Verdict = { kind: 'start' } | { kind: 'take_over'; since: string } | { kind: 'replay'; answer: KeptAnswer };

/**
 * What a request whose key was seen before gets: a fresh start when the record expired, the kept
 * answer when the first one succeeded, the place of a first one that died; 422 for another body
 * under the same key, 409 while the first one still runs.
 */
export function verdictOn(existing: IdempotencyDoc | null, requestHash: string, now: Date): Verdict {
  if (!existing || existing.expiresAt < now.toISOString()) return { kind: 'start' };
  if (existing.requestHash !== requestHash) {
    throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
  }
  if (existing.state === 'running') {
    if (now.getTime() - Date.parse(existing.createdAt) < STALE_RUNNING_MS) throw inProgress({ 'retry-after': '1' });
    return { kind: 'take_over', since: existing.createdAt };
  }
  return {
    kind: 'replay',
    answer: { status: existing.status ?? 200, headers: existing.headers ?? {}, body: existing.body ?? '' },
  };
}

export function inProgress(headers?: Record<string, string>): AppError {
  return new AppError(
    'idempotency_in_progress',
    'The first request with this Idempotency-Key is still running; retry shortly',
    headers ? { headers } : {},
  );
}

/** Fields that hold a secret shown once: never kept for a replay. */
const SECRET_FIELDS = new Set(['secret']);

/**
 * The answer body as kept for replays: JSON with every secret field left out (a replay of a call that
 * made a key says what was made, not the key), anything else as it is.
 */
export function keptBody(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const pending: unknown[] = [parsed];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (value === null || typeof value !== 'object') continue;
    for (const [key, child] of Object.entries(value)) {
      if (SECRET_FIELDS.has(key) && !Array.isArray(value)) delete (value as Record<string, unknown>)[key];
      else pending.push(child);
    }
  }
  return JSON.stringify(parsed);
}
