import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { GatewayRuntime } from './compose';
import { authenticateApiKeys } from './edge/authenticate';
import { installIdempotency } from './edge/idempotency';
import { installProxy } from './edge/proxy';
import { installRateLimit } from './edge/rate-limit';
import { jobEventsRoutes } from './jobs/job-events.routes';
import { accessRoutes } from './routes/access.routes';

const JSON_BODY_LIMIT = 5 * 1024 * 1024;
const UPLOAD_BODY_LIMIT = 600 * 1024 * 1024;

/**
 * The gateway as a Fastify plugin. Its edge is installed on the instance it is given, so it
 * covers every route behind it (the proxied services, or the services registered beside it in
 * the embedded process): rate limits, API-key authentication, Idempotency-Key. Plus the
 * gateway's own routes: API keys, accounts, job event streams.
 */
async function gateway(app: FastifyInstance, { runtime }: { runtime: GatewayRuntime }): Promise<void> {
  await installRateLimit(app, runtime.rateLimitPerMinute);
  authenticateApiKeys(app, runtime.access);
  installIdempotency(app, runtime.idempotency, runtime.clock);
  await app.register(accessRoutes, { access: runtime.access });
  // Served here rather than proxied: the gateway relays the workers' NATS progress notifications.
  await app.register(jobEventsRoutes, { bus: runtime.bus, jobs: runtime.jobs });
  if (runtime.upstreams) {
    await installProxy(app, { upstreams: runtime.upstreams.routes, signingSecret: runtime.upstreams.signingSecret, jsonBodyLimit: JSON_BODY_LIMIT, uploadBodyLimit: UPLOAD_BODY_LIMIT });
  }
}

/** Not encapsulated (fastify-plugin): the edge's hooks apply to the routes registered beside it. */
export const gatewayApp = fp(gateway, { name: 'gateway', fastify: '5.x' });
