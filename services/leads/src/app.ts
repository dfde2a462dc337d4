import type { FastifyInstance } from 'fastify';

/**
 * The leads service as a Fastify plugin. Capture, pipeline, routing, scoring and activities arrive with the
 * leads issue; until then the service runs, answers health and metrics, and serves no routes.
 */
export async function leadsApp(_app: FastifyInstance, _options: { runtime: LeadsRuntime }): Promise<void> {}

export interface LeadsRuntime {
  start(): Promise<void>;
  stop(): Promise<void>;
}
