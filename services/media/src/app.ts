import type { FastifyInstance } from 'fastify';
import type { MediaRuntime } from './compose';
import { fileRoutes } from './routes/files.routes';
import { mediaRoutes } from './routes/media.routes';

/** The media service as a Fastify plugin: routes only, no listen(), no env. */
export async function mediaApp(app: FastifyInstance, options: { runtime: MediaRuntime }): Promise<void> {
  await app.register(mediaRoutes, { gallery: options.runtime.gallery, uploads: options.runtime.uploads });
  await app.register(fileRoutes, { gallery: options.runtime.gallery });
}
