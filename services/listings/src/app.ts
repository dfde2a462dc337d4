import type { FastifyInstance } from 'fastify';
import type { ListingsRuntime } from './compose';
import { bulkRoutes } from './routes/bulk.routes';
import { feedRoutes } from './routes/feeds.routes';
import { listingRoutes } from './routes/listings.routes';
import { resoRoutes } from './routes/reso.routes';

/** The listings service as a Fastify plugin: routes only, no listen(), no env. */
export async function listingsApp(app: FastifyInstance, { runtime }: { runtime: ListingsRuntime }): Promise<void> {
  await app.register(listingRoutes, { listings: runtime.service, search: runtime.search });
  await app.register(bulkRoutes, { bulk: runtime.bulk });
  await app.register(feedRoutes, { feeds: runtime.feeds });
  await app.register(resoRoutes, { reso: runtime.reso, publicBaseUrl: runtime.publicBaseUrl });
}
