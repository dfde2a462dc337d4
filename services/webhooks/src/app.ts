import type { FastifyInstance } from 'fastify';
import type { WebhooksRuntime } from './compose';
import { entityEventRoutes } from './routes/entity-events.routes';
import { eventRoutes } from './routes/events.routes';
import { webhookRoutes } from './routes/webhooks.routes';

/** The webhooks service as a Fastify plugin: routes only, no listen(), no env. */
export async function webhooksApp(app: FastifyInstance, { runtime }: { runtime: WebhooksRuntime }): Promise<void> {
  await app.register(webhookRoutes, { endpoints: runtime.endpoints, deliveries: runtime.deliveries });
  await app.register(eventRoutes, { feed: runtime.feed });
  await app.register(entityEventRoutes, {
    events: runtime.entityEvents,
    ...(runtime.publicBaseUrl ? { publicBaseUrl: runtime.publicBaseUrl } : {}),
  });
}
