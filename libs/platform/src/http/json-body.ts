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

/** A lone UTF-16 surrogate: a string JSON can spell (`"\ud800"`) but UTF-8 cannot carry, and strict readers refuse. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** How a lone surrogate can reach a parsed body: only through a `\uD800`..`\uDFFF` escape in its text. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Where a value first holds an ill-formed string (a field's value or a key), walked without recursion; null when none. */
export function illFormedString(value: unknown): string | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (typeof next.value === 'string') {
      if (LONE_SURROGATE.test(next.value)) return next.path;
      continue;
    }
    if (next.value === null || typeof next.value !== 'object') continue;
    for (const [key, child] of Object.entries(next.value)) {
      const path = next.path ? `${next.path}.${key}` : key;
      // The path is sent back: the key's broken text is shown as U+FFFD.
      if (LONE_SURROGATE.test(key)) return path.replace(new RegExp(LONE_SURROGATE, 'g'), '\uFFFD');
      pending.push({ value: child, path });
    }
  }
  return null;
}

/**
 * JSON and merge-patch bodies through Fastify's own parser (prototype-poisoning checks included), then
 * refused with 422 when nested deeper than {@link JSON_BODY_MAX_DEPTH} or when a string holds a lone
 * surrogate, before any hook or handler reads them.
 */
export function installJsonBodyParsers(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  const guarded = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, value?: unknown) => void,
  ) => {
    const text = body.toString();
    return parse(request, text, (err: Error | null, value?: unknown) => {
      if (err) return done(err);
      const deep = tooDeep(value, JSON_BODY_MAX_DEPTH);
      if (deep !== null)
        return done(
          new AppError('validation_failed', 'The body is nested too deep', {
            errors: [{ path: deep, message: `JSON may be nested at most ${JSON_BODY_MAX_DEPTH} levels deep` }],
          }),
        );
      const broken = SURROGATE_ESCAPE.test(text) ? illFormedString(value) : null;
      if (broken !== null)
        return done(
          new AppError('validation_failed', 'The body holds text that is not valid Unicode', {
            errors: [{ path: broken, message: 'must be valid Unicode text: a surrogate escape needs its pair' }],
          }),
        );
      done(null, value);
    });
  };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, guarded);
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, guarded);
}
