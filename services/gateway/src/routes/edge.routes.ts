// The gateway's edge: hooks rather than routes, installed on the instance the gateway is given so
// they cover every route behind it (its own, the proxied services, or the services beside it in
// the embedded process). Decisions are the services'; this file only wires them into Fastify.
import rateLimit from '@fastify/rate-limit';
import { AppError } from '@estate/platform/errors';
import type { Identity } from '@estate/contracts/accounts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyRateLimitStoreCtor as RateLimitStoreCtor } from '@fastify/rate-limit';
import { isApiRequest, ORIGIN_HEADER } from '@estate/platform/auth';
import { addEarlyCheck } from '@estate/platform/http';
import { hashSecret } from '../access.rules';
import type { AccessService } from '../access.service';
import type { IdempotencyService } from '../idempotency.service';
import { keptBody } from '../idempotency.rules';
import { RESO_TOKEN_PATH } from './reso-token.routes';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key record this request holds, until its answer is kept. */
    idempotencyRecord?: string;
    /** The request's API key as looked up once (null until the first hook asks). */
    apiKeyLookup: ApiKeyLookup | null;
  }
}

/** Headers a replayed answer carries again. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'cache-control'];

interface ApiKeyLookup {
  /** sha256 of the bearer secret; null without one. */
  hash: string | null;
  /** The live key behind it (null: none, malformed, unknown or revoked). */
  who: Promise<Identity | null>;
}

/** The request's key, hashed and looked up once per request (the rate limit and authentication both ask). */
function apiKeyOf(request: FastifyRequest, access: AccessService): ApiKeyLookup {
  let lookup = request.apiKeyLookup;
  if (!lookup) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const hash = match ? hashSecret(match[1]) : null;
    lookup = { hash, who: hash ? access.authenticateHash(hash) : Promise.resolve(null) };
    request.apiKeyLookup = lookup;
  }
  return lookup;
}

/** Limits are per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface EdgeRateLimits {
  /** Per live API key (by key id), per minute. */
  perKeyPerMinute: number;
  /** Per client address for requests without a live key, per minute. */
  anonymousPerMinute: number;
  /** Counters shared by every gateway replica (distributed profile); counters of this process otherwise. */
  store?: RateLimitStoreCtor;
}

/**
 * Per-key limits on `/v1`, and per client address for requests without a live key (none, malformed,
 * unknown or revoked: a wrong key counts against its address, so guessing keys is limited too), with
 * the IETF `RateLimit-*` headers on every answer and `Retry-After` on a 429. Returns the check; the
 * edge runs it before authentication, so a refused key has been counted.
 */
async function rateLimiter(
  app: FastifyInstance,
  access: AccessService,
  limits: EdgeRateLimits,
): Promise<(request: FastifyRequest, reply: FastifyReply) => Promise<void>> {
  await app.register(rateLimit, {
    global: false,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    enableDraftSpec: true,
    ...(limits.store ? { store: limits.store } : {}),
    keyGenerator: async (request) => {
      const who = await apiKeyOf(request, access).who;
      return who ? `key:${who.keyId}` : `ip:${request.ip}`;
    },
    max: (_request, key) => (key.startsWith('key:') ? limits.perKeyPerMinute : limits.anonymousPerMinute),
    errorResponseBuilder: (_request, context) =>
      new AppError(
        'rate_limited',
        `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`,
      ),
  });
  const check = app.rateLimit();
  return async (request, reply) => {
    await check.call(app, request, reply);
  };
}

/**
 * Every `/v1` request is limited (first of all, so that an unsupported method's 405 is counted and carries the
 * `RateLimit-*` headers too), then must carry a live API key; the identity it maps to rides on the request.
 * Whether a request is under `/v1` follows the route it matched (the router has decoded its path), never the
 * raw URL, so `/%761/listings` needs a key exactly as `/v1/listings` does.
 */
function guardApi(
  app: FastifyInstance,
  access: AccessService,
  limit: (request: FastifyRequest, reply: FastifyReply) => Promise<void>,
): void {
  addEarlyCheck(app, async (request, reply) => {
    // The token endpoint takes no key but is limited like one (guessing secrets counts against the address).
    if (isApiRequest(request) || request.routeOptions.url === RESO_TOKEN_PATH) await limit(request, reply);
  });
  app.addHook('onRequest', async (request) => {
    if (!isApiRequest(request)) return;
    const lookup = apiKeyOf(request, access);
    const who = await lookup.who;
    if (!who) {
      throw new AppError(
        'unauthorized',
        lookup.hash ? 'The API key is not valid or was revoked' : 'Send `Authorization: Bearer <api key>`',
      );
    }
    request.identity = who;
  });
}

/**
 * `Idempotency-Key` on an authenticated POST (see IdempotencyService). The hooks run on every request but wait for
 * something only on those: Fastify's callback form, so that the others cost no promise.
 */
function keepIdempotentAnswers(app: FastifyInstance, idempotency: IdempotencyService): void {
  /** Holds the key for this request, or answers with the kept answer (true). */
  const holdOrReplay = async (request: FastifyRequest, reply: FastifyReply, key: unknown, keyId: string) => {
    const outcome = await idempotency.begin({
      keyId,
      method: request.method,
      path: request.url.split('?')[0],
      key,
      body: request.body,
    });
    if ('record' in outcome) {
      request.idempotencyRecord = outcome.record;
      return false;
    }
    for (const [name, value] of Object.entries(outcome.replay.headers)) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    reply
      .code(outcome.replay.status)
      .serializer((p: unknown) => p as string)
      .send(outcome.replay.body);
    return true;
  };

  const keep = async (record: string, reply: FastifyReply, payload: unknown): Promise<void> => {
    const cacheable =
      reply.statusCode >= 200 && reply.statusCode < 300 && (typeof payload === 'string' || Buffer.isBuffer(payload));
    if (!cacheable) return idempotency.finish(record, null);
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const v = reply.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    await idempotency.finish(record, { status: reply.statusCode, headers, body: keptBody(String(payload)) });
  };

  app.addHook('preHandler', (request, reply, done) => {
    const key = request.headers['idempotency-key'];
    // Uploads are not covered: the proxy reads them only to sign their digest.
    if (
      request.method !== 'POST' ||
      key === undefined ||
      !request.identity ||
      request.headers['content-type']?.startsWith('multipart/')
    )
      return done();
    // A replayed answer is sent from here: the hook then ends without `done`, as Fastify's callback form asks.
    holdOrReplay(request, reply, key, request.identity.keyId).then((replayed) => replayed || done(), done);
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    const record = request.idempotencyRecord;
    if (!record) return done(null, payload);
    request.idempotencyRecord = undefined;
    keep(record, reply, payload).then(() => done(null, payload), done);
  });
}

/** Rate limits, then API-key authentication, then Idempotency-Key: in that order on every `/v1` request. */
export async function installEdge(
  app: FastifyInstance,
  options: { access: AccessService; idempotency: IdempotencyService; rateLimits: EdgeRateLimits },
): Promise<void> {
  if (!app.hasRequestDecorator('apiKeyLookup')) app.decorateRequest('apiKeyLookup', null);
  // Only the gateway says where a client reached it (its proxy sets the header anew): a client's own is dropped.
  // Callback form, as every request runs it: no promise per request.
  app.addHook('onRequest', (request, _reply, done) => {
    delete request.headers[ORIGIN_HEADER];
    done();
  });
  guardApi(app, options.access, await rateLimiter(app, options.access, options.rateLimits));
  keepIdempotentAnswers(app, options.idempotency);
}
