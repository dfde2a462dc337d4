import { ORIGIN_HEADER } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ODataError, odataErrorBody } from './errors';
import { answerVersion, assertAcceptable } from './negotiation';

/** Where the RESO Web API answers (SPEC §13). */
export const RESO_ROOT = '/reso/odata';
export const ODATA_JSON_TYPE = 'application/json; odata.metadata=minimal';

/**
 * Makes a route scope an OData one: every answer carries the `OData-Version` the client can read (4.01, or 4.0 for a
 * client whose `OData-MaxVersion` is 4.0), an answer the request does not accept is refused (406) before any work,
 * and errors are OData error bodies. Each service serving part of the RESO Web API registers its routes in such a
 * scope.
 */
export function odataScope(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('odata-version', answerVersion(request.headers));
    // The path as the router decoded it: the rest after a catch-all route, else the route's own.
    const path = ((request.params as { '*'?: string })['*'] ?? request.routeOptions.url ?? '').replace(/\/+$/, '');
    // `$count` is text/plain whatever the request asks (OData 4.01 Part 2, 4.8): clients send their JSON Accept.
    if (/(^|\/)\$count$/.test(path)) return;
    const type = /(^|\/)\$metadata$/.test(path) ? 'application/xml' : 'application/json';
    assertAcceptable(request, odataQueryOptions(request.query).$format, type);
  });
  app.setErrorHandler((err: FastifyError, request, reply) => sendODataError(err, request, reply));
}

/** The service root and the base of absolute links: `PUBLIC_BASE_URL`, else where the client reached the product. */
export function odataRoots(request: FastifyRequest, publicBaseUrl?: string): { baseUrl: string; serviceRoot: string } {
  // Behind the gateway (distributed), where the client reached it; embedded, this server.
  const forwarded = request.headers[ORIGIN_HEADER];
  const origin = typeof forwarded === 'string' && /^https?:\/\/[^/\s]+$/.test(forwarded) ? forwarded : undefined;
  const base = (publicBaseUrl ?? origin ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
  return { baseUrl: base, serviceRoot: `${base}${RESO_ROOT}` };
}

/** OData's system query options, by their name in lower case without `$`. */
const SYSTEM_OPTIONS = new Set([
  'apply',
  'compute',
  'count',
  'deltatoken',
  'expand',
  'filter',
  'format',
  'id',
  'index',
  'levels',
  'orderby',
  'schemaversion',
  'search',
  'select',
  'skip',
  'skiptoken',
  'top',
]);

/**
 * The query string as single values, system options under their usual name (`$filter`): OData 4.01 takes their
 * names in any case and with or without `$`, so `filter=` and `$FILTER=` are `$filter` here rather than ignored or
 * refused. An option given twice, under either spelling, is refused.
 */
export function odataQueryOptions(query: unknown): Record<string, string | undefined> {
  // No prototype: an option may be called anything, `__proto__` included.
  const out = Object.create(null) as Record<string, string | undefined>;
  for (const [given, value] of Object.entries((query ?? {}) as Record<string, string | string[]>)) {
    const bare = given.replace(/^\$/, '').toLowerCase();
    const name = SYSTEM_OPTIONS.has(bare) ? `$${bare}` : given;
    if (Array.isArray(value) || Object.hasOwn(out, name))
      throw new ODataError(400, 'BadRequest', `${name} is given more than once`, name);
    out[name] = value;
  }
  return out;
}

export function sendODataError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
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
  // The version the scope's hook chose, unless choosing it is what failed.
  if (!reply.hasHeader('odata-version')) reply.header('odata-version', '4.01');
  return reply.code(status).type('application/json').send(body);
}
