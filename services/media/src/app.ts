import type { FastifyInstance } from 'fastify';
import type { MediaRuntime } from './compose';
import { fileRoutes } from './routes/files.routes';
import { mediaRoutes } from './routes/media.routes';

/** The media service as a Fastify plugin: routes only, no listen(), no env. */
export async function mediaApp(app: FastifyInstance, options: { runtime: MediaRuntime }): Promise<void> {
  await app.register(mediaRoutes, { service: options.runtime.service });
  await app.register(fileRoutes, { service: options.runtime.service });
}
