import rateLimit from '@fastify/rate-limit';
import { AppError } from '@estate/platform/errors';
import type { FastifyInstance } from 'fastify';
import { keyHashOf } from './authenticate';

/**
 * Per-key limits on `/v1` (per client address for requests without a key), with the IETF
 * `RateLimit-*` headers on every answer and `Retry-After` on a 429. Counters live in this
 * gateway process.
 */
export async function installRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
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
      new AppError('rate_limited', `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
}
