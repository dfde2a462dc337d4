import type { FastifyInstance } from 'fastify';
import type { GatewayRuntime } from './compose';
import { authenticateApiKeys } from './edge/authenticate';
import { installIdempotency } from './edge/idempotency';
import { installRateLimit } from './edge/rate-limit';
import { accessRoutes } from './routes/access.routes';

/**
 * The edge every request crosses, installed on the root instance so it covers every route
 * behind it: rate limits, API-key authentication, Idempotency-Key; plus the gateway's own
 * routes (API keys, accounts).
 */
export async function installGatewayEdge(app: FastifyInstance, runtime: GatewayRuntime, options: { rateLimitPerMinute: number }): Promise<void> {
  await installRateLimit(app, options.rateLimitPerMinute);
  authenticateApiKeys(app, runtime.access);
  installIdempotency(app, runtime.idempotency, runtime.clock);
  await app.register(accessRoutes, { access: runtime.access });
}
