import { requestContext } from '@estate/platform/auth';
import { ODATA_JSON_TYPE, odataQueryOptions, odataRoots, odataScope, preferredPageSize, RESO_ROOT } from '@estate/reso';
import type { FastifyInstance } from 'fastify';
import type { EntityEventService } from '../entity-events.service';

/**
 * The RESO Web API's EntityEvent resource (RCP-027), the part of `/reso/odata` this service answers: the account's
 * change feed. `$metadata` and the other resources are the listings service's; the mapping table both read is one.
 */
export async function entityEventRoutes(
  app: FastifyInstance,
  options: { events: EntityEventService; publicBaseUrl?: string },
): Promise<void> {
  odataScope(app);
  app.get(`${RESO_ROOT}/EntityEvent`, { schema: { hide: true } }, async (request, reply) => {
    const prefer = preferredPageSize(request.headers.prefer);
    const page = await options.events.list(requestContext(request), {
      options: odataQueryOptions(request.query),
      pageSize: prefer.size,
      serviceRoot: odataRoots(request, options.publicBaseUrl).serviceRoot,
    });
    if (prefer.applied) reply.header('preference-applied', `odata.maxpagesize=${prefer.size}`);
    return reply.type(ODATA_JSON_TYPE).send(page.body);
  });
}
