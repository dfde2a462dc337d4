import { errorStatus, errorTitles, type ErrorCode, type FieldError } from '@estate/contracts/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, fieldErrors } from '../errors';
import { redactKeys } from '../logging';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The limit of a multipart body on a route that reads it with a parser of its own (named in a 413). */
    multipartBodyLimit?: number;
  }
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemBody(
  code: ErrorCode,
  detail: string,
  requestId: string,
  errors?: FieldError[],
  fields?: Record<string, unknown>,
) {
  return {
    type: `urn:estate:problem:${code}`,
    title: errorTitles[code],
    status: errorStatus[code],
    detail,
    code,
    requestId,
    ...(errors ? { errors } : {}),
    ...fields,
  };
}

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  for (const [k, v] of Object.entries(error.extra.headers ?? {})) reply.header(k, v);
  return reply
    .code(error.status)
    .type(PROBLEM_CONTENT_TYPE)
    .serializer(JSON.stringify)
    .send(problemBody(error.code, error.detail, String(reply.request.id), error.extra.errors, error.extra.fields));
}

/** Bytes as a person reads them: `5 MiB (5242880 bytes)`. */
export function byteSize(bytes: number): string {
  const units: [number, string][] = [
    [1024 * 1024 * 1024, 'GiB'],
    [1024 * 1024, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of units)
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit} (${bytes} bytes)`;
  return `${bytes} bytes`;
}

/**
 * The body limit in force for a request: the route's (or the server's), unless the route names another for
 * multipart bodies in its config (`multipartBodyLimit`, the gateway's proxied uploads).
 */
function bodyLimitOf(request: FastifyRequest): number {
  const multipart = /^multipart\//i.test(request.headers['content-type'] ?? '');
  return (multipart ? request.routeOptions.config?.multipartBodyLimit : undefined) ?? request.routeOptions.bodyLimit;
}

/** Maps the errors Fastify and its plugins raise onto our codes. */
function fromFastifyError(err: FastifyError, request: FastifyRequest): AppError {
  const status = err.statusCode ?? 500;
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('malformed_request', `The body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Send the body as application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        `The request body is larger than this endpoint accepts: at most ${byteSize(bodyLimitOf(request))}`,
      );
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('payload_too_large', 'A file is larger than this endpoint accepts');
    default:
      break;
  }
  if (err instanceof SyntaxError && status === 400)
    return new AppError('malformed_request', `The body is not valid JSON: ${err.message}`);
  if (status === 413) return new AppError('payload_too_large', err.message);
  if (status === 415) return new AppError('unsupported_media_type', err.message);
  if (status === 429) return new AppError('rate_limited', err.message);
  if (status === 404) return new AppError('not_found', err.message);
  if (status === 405) return new AppError('method_not_allowed', err.message);
  if (status >= 400 && status < 500) return new AppError('malformed_request', err.message);
  return new AppError('internal_error', 'Something went wrong on our side; the request id identifies it in our logs', {
    cause: err,
  });
}

/** Most of a refused body read and dropped before its answer; a larger one is answered at once and cut off. */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Reads and drops what is left of a request body the answer does not need (a body refused as too large, or any
 * error answered while the client still sends). The answer then closes a connection with nothing unread in it, so
 * the client receives it; closing on unread bytes resets the connection and the client sees EPIPE or ECONNRESET
 * instead. A body announced or found larger than {@link DRAIN_MAX_BYTES} is not waited for; slow clients are cut
 * off by the request timeout as always.
 */
export function drainBody(request: FastifyRequest): Promise<void> {
  const raw = request.raw;
  if (raw.complete || raw.readableEnded || raw.destroyed) return Promise.resolve();
  if (Number(raw.headers['content-length']) > DRAIN_MAX_BYTES) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > DRAIN_MAX_BYTES) done();
    };
    const done = () => {
      raw.off('data', onData).off('end', done).off('close', done).off('error', done);
      resolve();
    };
    raw.on('data', onData).once('end', done).once('close', done).once('error', done);
    raw.resume();
  });
}

/** Codes of the errors a stream fails with when the connection it was answering was closed by the client. */
const ABORTED = new Set(['UND_ERR_ABORTED', 'ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE']);

/** Whether the client left first: its connection is closed and the failure is the answer being cut off with it. */
function clientLeft(err: unknown, reply: FastifyReply): boolean {
  const { code, name } = (err ?? {}) as { code?: string; name?: string };
  return reply.raw.destroyed && ((code !== undefined && ABORTED.has(code)) || name === 'AbortError');
}

/** The one error handler: every failure leaves as problem+json; 5xx never show internals. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    let appError: AppError;
    if (err instanceof AppError) {
      appError = err;
    } else if (hasZodFastifySchemaValidationErrors(err)) {
      const issues = err.validation.map((v) => ({
        code: String(v.keyword),
        path: v.instancePath.split('/').filter(Boolean),
        message: v.message ?? 'is invalid',
        keys: (v.params as { keys?: string[] }).keys,
        errors: (v.params as { errors?: Array<Array<{ code: string; path: PropertyKey[]; message: string }>> }).errors,
      }));
      const where =
        err.validationContext === 'body'
          ? 'body'
          : err.validationContext === 'querystring'
            ? 'query parameters'
            : 'path parameters';
      appError = new AppError('validation_failed', `The ${where} did not pass validation`, {
        errors: fieldErrors(issues),
      });
    } else if (isResponseSerializationError(err as never)) {
      appError = new AppError(
        'internal_error',
        'Something went wrong on our side; the request id identifies it in our logs',
        { cause: err },
      );
    } else {
      appError = fromFastifyError(err, request);
    }
    if (clientLeft(err, reply)) {
      // Not a failure of ours: nobody is left to answer (a proxied answer is cut off when its client goes).
      request.log.info({ code: (err as { code?: string }).code }, 'the client closed the connection before its answer');
    } else if (appError.code === 'dependency_unavailable') {
      // Expected while an engine is away: one line per request, no stack trace.
      const cause = appError.extra.cause as { message?: string } | undefined;
      request.log.warn({ code: appError.code, reason: cause?.message ?? appError.detail }, appError.detail);
    } else if (appError.status >= 500) request.log.error({ err: appError.extra.cause ?? err }, 'request failed');
    else
      request.log.info(
        {
          code: appError.code,
          status: appError.status,
          // The fields that failed, by path and reason (never their values).
          ...(appError.extra.errors
            ? {
                errors: appError.extra.errors.map((e) => ({
                  path: redactKeys(e.path),
                  message: redactKeys(e.message),
                })),
              }
            : {}),
        },
        redactKeys(appError.detail),
      );
    await drainBody(request);
    return sendProblem(reply, appError);
  });

  answerUnsupportedMethods(app);
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}`)),
  );
}

/** find-my-way's route syntax as a regular expression over a concrete path. */
function patternOf(url: string): RegExp {
  const body = url
    .split('/')
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${body}/?$`);
}

type EarlyCheck = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
const kEarlyChecks = Symbol('earlyChecks');

/**
 * Runs `check` on every request before the unsupported-method check, so that an answer of that check is treated
 * like every other: the gateway counts the request against its rate limit there, and a 405 to a keyed call carries
 * the `RateLimit-*` headers. Checks run in the order they were added.
 */
export function addEarlyCheck(app: FastifyInstance, check: EarlyCheck): void {
  (app as unknown as Record<symbol, EarlyCheck[]>)[kEarlyChecks].push(check);
}

/**
 * A path that exists with other methods answers 405 with `Allow` (RFC 9110), before anything else reads the
 * request (only the early checks run first): an unknown method must not reach body parsing or authentication.
 */
function answerUnsupportedMethods(app: FastifyInstance): void {
  const early: EarlyCheck[] = [];
  app.decorate(kEarlyChecks, early);
  const routes: { pattern: RegExp; params: number; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const params = route.url.split('/').filter((p) => p.startsWith(':') || p === '*').length;
    routes.push({ pattern: patternOf(route.url), params, methods });
  });
  app.addHook('onRequest', async (request, reply) => {
    for (const check of early) {
      await check(request, reply);
      if (reply.sent) return;
    }
    if (!request.is404) return;
    const path = request.url.split('?')[0];
    // The resource is the most specific pattern that matches (`/v1/listings/bulk` rather than `/v1/listings/:id`).
    const matching = routes.filter((r) => r.pattern.test(path));
    const fewest = Math.min(...matching.map((r) => r.params));
    const allowed = new Set<string>();
    for (const r of matching) if (r.params === fewest) for (const m of r.methods) allowed.add(m);
    if (allowed.size === 0 || allowed.has(request.method)) return;
    throw new AppError('method_not_allowed', `${request.method} is not supported on ${path}`, {
      headers: { allow: [...allowed].sort().join(', ') },
    });
  });
}
