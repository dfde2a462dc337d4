import type { FastifyInstance } from 'fastify';

/**
 * The media service as a Fastify plugin. Photos, thumbnails and virtual tours arrive with the
 * media issue; until then the service runs, answers health and metrics, and serves no routes.
 */
export async function mediaApp(_app: FastifyInstance, _options: { runtime: MediaRuntime }): Promise<void> {}

export interface MediaRuntime {
  start(): Promise<void>;
  stop(): Promise<void>;
}
