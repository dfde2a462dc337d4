import { AppError } from '@estate/platform/errors';
import { assertIdempotencyKey, fingerprintOf, recordIdOf, STALE_RUNNING_MS, verdictOn } from './idempotency.rules';
import type { IdempotencyDoc } from './repositories/idempotency.repository';

const now = new Date('2025-01-01T12:00:00.000Z');
const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
const record = (over: Partial<IdempotencyDoc> = {}): IdempotencyDoc => ({
  id: 'r1',
  state: 'done',
  requestHash: 'h1',
  status: 201,
  headers: { location: '/v1/x/1' },
  body: '{"n":1}',
  createdAt: at(-1000),
  expiresAt: at(60_000),
  ...over,
});
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.code : 'not an AppError';
  }
  return undefined;
};

describe('idempotency rules', () => {
  it('accepts keys of 1 to 255 characters only', () => {
    expect(codeOf(() => assertIdempotencyKey('k'))).toBeUndefined();
    expect(codeOf(() => assertIdempotencyKey('k'.repeat(255)))).toBeUndefined();
    for (const bad of ['', 'k'.repeat(256), ['a', 'b'], undefined])
      expect(codeOf(() => assertIdempotencyKey(bad))).toBe('validation_failed');
  });

  it('scopes a key to the API key, method and path', () => {
    const base = { keyId: 'key_1', method: 'POST', path: '/v1/listings', key: 'k' };
    expect(recordIdOf(base)).toBe(recordIdOf({ ...base }));
    for (const other of [{ keyId: 'key_2' }, { method: 'PUT' }, { path: '/v1/leads' }, { key: 'k2' }]) {
      expect(recordIdOf({ ...base, ...other })).not.toBe(recordIdOf(base));
    }
  });

  it('fingerprints the body as sent: the same bytes match, whatever form they come in', () => {
    expect(fingerprintOf({ a: 1 })).toBe(fingerprintOf('{"a":1}'));
    expect(fingerprintOf(Buffer.from('{"a":1}'))).toBe(fingerprintOf('{"a":1}'));
    expect(fingerprintOf({ a: 2 })).not.toBe(fingerprintOf({ a: 1 }));
    expect(fingerprintOf(undefined)).toBe(fingerprintOf(null));
  });

  it('starts afresh without a record or after it expired, whatever the body', () => {
    expect(verdictOn(null, 'h1', now)).toEqual({ kind: 'start' });
    expect(verdictOn(record({ expiresAt: at(-1), requestHash: 'other' }), 'h1', now)).toEqual({ kind: 'start' });
  });

  it('replays a kept answer, and refuses another body under the same key', () => {
    expect(verdictOn(record(), 'h1', now)).toEqual({
      kind: 'replay',
      answer: { status: 201, headers: { location: '/v1/x/1' }, body: '{"n":1}' },
    });
    expect(codeOf(() => verdictOn(record(), 'h2', now))).toBe('idempotency_key_reused');
  });

  it('is in progress while the first request runs, and takes over one that has been running too long', () => {
    expect(codeOf(() => verdictOn(record({ state: 'running' }), 'h1', now))).toBe('idempotency_in_progress');
    const stale = record({ state: 'running', createdAt: at(-STALE_RUNNING_MS) });
    expect(verdictOn(stale, 'h1', now)).toEqual({ kind: 'take_over', since: stale.createdAt });
  });
});
