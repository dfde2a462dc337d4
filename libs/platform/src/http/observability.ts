import type { FastifyInstance } from 'fastify';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AppError } from '../errors';
import { sendProblem } from './problem';
import { domainRegistry } from '../metrics';

export type ReadinessCheck = () => Promise<void>;

/** A readiness probe answers within a second: each dependency gets this long. */
const READINESS_TIMEOUT_MS = 800;

/**
 * `/health/live` (the process answers), `/health/ready` (every dependency answers) and
 * `/metrics` (Prometheus text) for one service; no key needed.
 */

export function installObservability(
  app: FastifyInstance,
  options: { service: string; checks: Record<string, ReadinessCheck> },
): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  // Callback form, as every request runs it: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (!route.startsWith('/health') && route !== '/metrics')
      duration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });

  app.get('/health/live', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  // Last state of each dependency: a change is logged once, in one line, not every failed probe with a stack.
  const lastState = new Map<string, 'ok' | 'unavailable'>();
  app.get('/health/ready', { schema: { hide: true } }, async (request, reply) => {
    const results = await Promise.all(
      Object.entries(options.checks).map(async ([name, check]) => {
        let state: 'ok' | 'unavailable' = 'ok';
        let reason: string | undefined;
        try {
          await Promise.race([
            check(),
            new Promise((_, reject) =>
              setTimeout(
                () => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)),
                READINESS_TIMEOUT_MS,
              ).unref(),
            ),
          ]);
        } catch (err) {
          state = 'unavailable';
          reason = err instanceof Error ? err.message : String(err);
        }
        if (lastState.get(name) !== state) {
          if (state === 'unavailable') request.log.warn({ dependency: name, reason }, 'dependency unavailable');
          else if (lastState.has(name)) request.log.info({ dependency: name }, 'dependency available again');
          lastState.set(name, state);
        }
        return [name, state] as const;
      }),
    );
    const checks = Object.fromEntries(results);
    if (results.some(([, s]) => s !== 'ok')) {
      // Sent, not thrown: a failed probe is an expected answer, not an error to log with a stack.
      return sendProblem(
        reply,
        new AppError(
          'service_unavailable',
          `Not ready: ${results
            .filter(([, s]) => s !== 'ok')
            .map(([n]) => n)
            .join(', ')}`,
          { fields: { checks } },
        ),
      );
    }
    return reply.send({ status: 'ok', checks });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType);
    return `${await registry.metrics()}\n${await domainRegistry.metrics()}`;
  });
  return registry;
}
