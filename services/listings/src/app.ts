import type { FastifyInstance } from 'fastify';
import type { BulkService } from './bulk/bulk.service';
import { bulkRoutes } from './bulk/bulk.routes';
import type { ListingsService } from './listings.service';
import { listingRoutes } from './routes/listings.routes';

/** The listings service as a Fastify plugin: routes only, no listen(), no env. */
export async function listingsApp(app: FastifyInstance, options: { service: ListingsService; bulk: BulkService }): Promise<void> {
  await app.register(listingRoutes, options);
  await app.register(bulkRoutes, options);
}
