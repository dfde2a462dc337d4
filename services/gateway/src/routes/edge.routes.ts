// The gateway's edge: hooks rather than routes, installed on the instance the gateway is given so
// they cover every route behind it (its own, the proxied services, or the services beside it in
// the embedded process). Decisions are the services'; this file only wires them into Fastify.
import rateLimit from '@fastify/rate-limit';
import { AppError } from '@estate/platform/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashSecret } from '../access.rules';
import type { AccessService } from '../access.service';
import type { IdempotencyService } from '../idempotency.service';
import { keptBody } from '../idempotency.rules';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key record this request holds, until its answer is kept. */
    idempotencyRecord?: string;
  }
}

/** Headers a replayed answer carries again. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'cache-control'];

const hashes = new WeakMap<FastifyRequest, string | null>();

/** sha256 of the request's bearer secret (null without one), computed once per request. */
function keyHashOf(request: FastifyRequest): string | null {
  let hash = hashes.get(request);
  if (hash === undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    hash = match ? hashSecret(match[1]) : null;
    hashes.set(request, hash);
  }
  return hash;
}

const isApi = (request: FastifyRequest): boolean => request.url.startsWith('/v1/') || request.url === '/v1';

/**
 * Per-key limits on `/v1` (per client address for requests without a key), with the IETF
 * `RateLimit-*` headers on every answer and `Retry-After` on a 429. Counters live in this
 * gateway process.
 */
async function limitRates(app: FastifyInstance, perMinute: number): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: perMinute,
    timeWindow: 60_000,
    enableDraftSpec: true,
    allowList: (request) => !request.url.startsWith('/v1'),
    keyGenerator: (request) => {
      const hash = keyHashOf(request);
      return hash ? `key:${hash}` : `ip:${request.ip}`;
    },
    errorResponseBuilder: (_request, context) =>
      new AppError(
        'rate_limited',
        `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`,
      ),
  });
}

/** Every `/v1` request must carry a live API key; the identity it maps to rides on the request. */
function authenticateApiKeys(app: FastifyInstance, access: AccessService): void {
  app.addHook('onRequest', async (request) => {
    if (!isApi(request)) return;
    const hash = keyHashOf(request);
    if (!hash) throw new AppError('unauthorized', 'Send `Authorization: Bearer <api key>`');
    const who = await access.authenticateHash(hash);
    if (!who) throw new AppError('unauthorized', 'The API key is not valid or was revoked');
    request.identity = who;
  });
}

/** `Idempotency-Key` on an authenticated POST (see IdempotencyService). */
function keepIdempotentAnswers(app: FastifyInstance, idempotency: IdempotencyService): void {
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (request.method !== 'POST' || key === undefined || !request.identity) return;
    // Uploads are not covered: the proxy reads them only to sign their digest.
    if (request.headers['content-type']?.startsWith('multipart/')) return;
    const outcome = await idempotency.begin({
      keyId: request.identity.keyId,
      method: request.method,
      path: request.url.split('?')[0],
      key,
      body: request.body,
    });
    if ('record' in outcome) {
      request.idempotencyRecord = outcome.record;
      return;
    }
    for (const [name, value] of Object.entries(outcome.replay.headers)) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    return reply
      .code(outcome.replay.status)
      .serializer((p: unknown) => p as string)
      .send(outcome.replay.body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const record = request.idempotencyRecord;
    if (!record) return payload;
    request.idempotencyRecord = undefined;
    const cacheable =
      reply.statusCode >= 200 && reply.statusCode < 300 && (typeof payload === 'string' || Buffer.isBuffer(payload));
    if (!cacheable) {
      await idempotency.finish(record, null);
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const v = reply.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    await idempotency.finish(record, { status: reply.statusCode, headers, body: keptBody(payload.toString()) });
    return payload;
  });
}

/** Rate limits, then API-key authentication, then Idempotency-Key: in that order on every request. */
export async function installEdge(
  app: FastifyInstance,
  options: { access: AccessService; idempotency: IdempotencyService; rateLimitPerMinute: number },
): Promise<void> {
  await limitRates(app, options.rateLimitPerMinute);
  authenticateApiKeys(app, options.access);
  keepIdempotentAnswers(app, options.idempotency);
}
