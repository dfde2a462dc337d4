import { assertRole, callerOf, ORIGIN_HEADER, requestContext } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import {
  keyPredicate,
  metadataXml,
  ODataError,
  odataErrorBody,
  preferredPageSize,
  serviceDocument,
} from '@estate/reso';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RESO_READERS, type ResoService } from '../reso.service';

/** Where the RESO Web API answers (SPEC §13). */
export const RESO_ROOT = '/reso/odata';
const JSON_TYPE = 'application/json; odata.metadata=minimal';

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
  const roots = (request: FastifyRequest) => {
    // Behind the gateway (distributed), where the client reached it; embedded, this server.
    const forwarded = request.headers[ORIGIN_HEADER];
    const origin = typeof forwarded === 'string' && /^https?:\/\/[^/\s]+$/.test(forwarded) ? forwarded : undefined;
    const base = (options.publicBaseUrl ?? origin ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
    return { baseUrl: base, serviceRoot: `${base}${RESO_ROOT}` };
  };

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('odata-version', '4.01');
    return payload;
  });
  app.setErrorHandler((err: FastifyError, request, reply) => sendODataError(err, request, reply));

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ((request.params as { '*'?: string })['*'] ?? '').replace(/^\/+|\/+$/g, '');
    const query = queryOptions(request.query);
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

/** The query string as single values; a repeated system option is refused. */
function queryOptions(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, string | string[]>)) {
    if (Array.isArray(value)) throw new ODataError(400, 'BadRequest', `${name} is given more than once`, name);
    out[name] = value;
  }
  return out;
}

function sendODataError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  let status: number;
  let body: ReturnType<typeof odataErrorBody>;
  if (err instanceof ODataError) {
    status = err.status;
    body = odataErrorBody(err);
  } else if (err instanceof AppError) {
    status = err.status;
    for (const [k, v] of Object.entries(err.extra.headers ?? {})) reply.header(k, v);
    body = odataErrorBody({ code: err.code, message: err.detail });
  } else if ((err.statusCode ?? 500) < 500) {
    status = err.statusCode!;
    body = odataErrorBody({ code: 'BadRequest', message: err.message });
  } else {
    request.log.error({ err }, 'RESO request failed');
    status = 500;
    body = odataErrorBody({ code: 'InternalError', message: 'Something went wrong on our side' });
  }
  return reply.code(status).type('application/json').header('odata-version', '4.01').send(body);
}
