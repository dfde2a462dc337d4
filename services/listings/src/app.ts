import type { FastifyInstance } from 'fastify';
import type { ListingsService } from './listings.service';
import { listingRoutes } from './routes/listings.routes';

/** The listings service as a Fastify plugin: routes only, no listen(), no env. */
export async function listingsApp(app: FastifyInstance, options: { service: ListingsService }): Promise<void> {
  await app.register(listingRoutes, options);
}
