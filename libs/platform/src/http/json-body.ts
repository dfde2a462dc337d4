import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

/** Deeper JSON bodies are refused: no resource needs them, and recursive readers (serialisers, stores) overflow on them. */
export const JSON_BODY_MAX_DEPTH = 64;

/** Where a value first nests deeper than `max` levels, walked without recursion; null when it does not. */
export function tooDeep(value: unknown, max: number): string | null {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: '', depth: 1 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.depth > max) return next.path;
    for (const [key, child] of Object.entries(next.value))
      pending.push({ value: child, path: next.path ? `${next.path}.${key}` : key, depth: next.depth + 1 });
  }
  return null;
}

/**
 * JSON and merge-patch bodies through Fastify's own parser (prototype-poisoning checks included), then
 * refused with 422 when nested deeper than {@link JSON_BODY_MAX_DEPTH}, before any hook or handler reads them.
 */
export function installJsonBodyParsers(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  const guarded = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, value?: unknown) => void,
  ) =>
    parse(request, body.toString(), (err: Error | null, value?: unknown) => {
      if (err) return done(err);
      const path = tooDeep(value, JSON_BODY_MAX_DEPTH);
      if (path === null) return done(null, value);
      done(
        new AppError('validation_failed', 'The body is nested too deep', {
          errors: [{ path, message: `JSON may be nested at most ${JSON_BODY_MAX_DEPTH} levels deep` }],
        }),
      );
    });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, guarded);
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, guarded);
}
