import { assertRole, callerOf, requestContext } from '@estate/platform/auth';
import {
  keyPredicate,
  metadataXml,
  ODATA_JSON_TYPE,
  ODataError,
  odataQueryOptions,
  odataRoots,
  odataScope,
  preferredPageSize,
  RESO_ROOT,
  serviceDocument,
} from '@estate/reso';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RESO_READERS, type ResoService } from '../reso.service';

export { RESO_ROOT };
const JSON_TYPE = ODATA_JSON_TYPE;

/**
 * The RESO Web API (OData v4.01) read routes: one catch-all under the service root, dispatched by its path
 * (`Property('k')` is no path a router can name). Their contract is `$metadata`, not the OpenAPI document. Every
 * answer carries `OData-Version: 4.01`; errors are OData error bodies.
 */
export async function resoRoutes(
  app: FastifyInstance,
  options: { reso: ResoService; publicBaseUrl?: string },
): Promise<void> {
  const metadata = metadataXml();
  const roots = (request: FastifyRequest) => odataRoots(request, options.publicBaseUrl);
  odataScope(app);

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ((request.params as { '*'?: string })['*'] ?? '').replace(/^\/+|\/+$/g, '');
    const query = odataQueryOptions(request.query);
    const ctx = requestContext(request);
    assertRole(callerOf(request), RESO_READERS, 'read the RESO Web API');
    if (path === '') return reply.type(JSON_TYPE).send(serviceDocument(roots(request).serviceRoot));
    if (path === '$metadata') return reply.type('application/xml').send(metadata);
    if (path === 'Property') {
      const prefer = preferredPageSize(request.headers.prefer);
      const page = await options.reso.properties(ctx, {
        options: query,
        pageSize: prefer.size,
        ...roots(request),
      });
      if (prefer.applied) reply.header('preference-applied', `odata.maxpagesize=${prefer.size}`);
      return reply.type(JSON_TYPE).send(page.body);
    }
    if (path === 'Property/$count')
      return reply.type('text/plain; charset=utf-8').send(String(await options.reso.propertyCount(ctx, query)));
    if (path === 'Media') return reply.type(JSON_TYPE).send(await options.reso.media(ctx, query, roots(request)));
    const entity = /^Property\(([^/]*)\)(\/Media)?$/.exec(path);
    if (entity) {
      const key = keyPredicate(entity[1], 'ListingKey');
      if (key === null) throw new ODataError(400, 'BadRequest', `Cannot read the key ${entity[1]}`, 'ListingKey');
      const body = entity[2]
        ? await options.reso.propertyMedia(ctx, key, query, roots(request))
        : await options.reso.property(ctx, key, query, roots(request));
      return reply.type(JSON_TYPE).send(body);
    }
    throw new ODataError(404, 'NotFound', `No resource is served at ${path}`);
  };
  app.get(RESO_ROOT, { schema: { hide: true } }, handler);
  app.get(`${RESO_ROOT}/*`, { schema: { hide: true } }, handler);
}
