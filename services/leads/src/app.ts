import type { FastifyInstance } from 'fastify';
import type { LeadsRuntime } from './compose';
import { activityRoutes } from './routes/activities.routes';
import { agentRoutes } from './routes/agents.routes';
import { leadRoutes } from './routes/leads.routes';
import { routingRoutes } from './routes/routing.routes';
import { scoringRoutes } from './routes/scoring.routes';

/** The leads service as a Fastify plugin: routes only, no listen(), no env. */
export async function leadsApp(app: FastifyInstance, { runtime }: { runtime: LeadsRuntime }): Promise<void> {
  await app.register(leadRoutes, { leads: runtime.leads, routing: runtime.routing });
  await app.register(activityRoutes, { activities: runtime.activities });
  await app.register(agentRoutes, { agents: runtime.agents });
  await app.register(routingRoutes, { routing: runtime.routing, rules: runtime.routingRules });
  await app.register(scoringRoutes, { scoring: runtime.scoring });
}
