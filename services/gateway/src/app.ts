import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { proxyToUpstreams } from './clients/upstreams.client';
import type { GatewayRuntime } from './compose';
import { accessRoutes } from './routes/access.routes';
import { installEdge } from './routes/edge.routes';
import { jobEventsRoutes } from './routes/job-events.routes';
import { resoTokenRoutes } from './routes/reso-token.routes';

const JSON_BODY_LIMIT = 5 * 1024 * 1024;
const UPLOAD_BODY_LIMIT = 600 * 1024 * 1024;

/**
 * The gateway as a Fastify plugin. Its edge is installed on the instance it is given, so it
 * covers every route behind it (the proxied services, or the services registered beside it in
 * the embedded process): rate limits, API-key authentication, Idempotency-Key. Plus the
 * gateway's own routes: API keys, accounts, job event streams.
 */
async function gateway(app: FastifyInstance, { runtime }: { runtime: GatewayRuntime }): Promise<void> {
  await installEdge(app, {
    access: runtime.access,
    idempotency: runtime.idempotency,
    rateLimits: runtime.rateLimits,
  });
  await app.register(accessRoutes, { access: runtime.access });
  await app.register(resoTokenRoutes, { access: runtime.access });
  // Served here rather than proxied: the gateway relays the workers' NATS progress notifications.
  await app.register(jobEventsRoutes, {
    bus: runtime.bus,
    jobs: runtime.jobs,
    heartbeatMs: runtime.jobEventsHeartbeatMs,
  });
  if (runtime.upstreams) {
    await proxyToUpstreams(app, {
      upstreams: runtime.upstreams.routes,
      signingSecret: runtime.upstreams.signingSecret,
      jsonBodyLimit: JSON_BODY_LIMIT,
      uploadBodyLimit: UPLOAD_BODY_LIMIT,
    });
  }
}

/** Not encapsulated (fastify-plugin): the edge's hooks apply to the routes registered beside it. */
export const gatewayApp = fp(gateway, { name: 'gateway', fastify: '5.x' });
