import type { FastifyRequest } from 'fastify';

/** A path as a lenient reader would take it: decoded (repeatedly), case-folded, repeated slashes collapsed. */
function canonicalPath(raw: string): string {
  let path = raw.split('?')[0];
  for (let i = 0; i < 4; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      break;
    }
    if (decoded === path) break;
    path = decoded;
  }
  return path.replace(/\/{2,}/g, '/').toLowerCase();
}

/**
 * Whether a request needs an API key: everything under `/v1` and the RESO Web API under `/reso/odata`. Decided by the route it matched (a pattern
 * the router reached after decoding the path), so no spelling of a URL reaches a `/v1` route without a
 * key; a path that matched no route, by its canonical form, so probing unknown `/v1` paths needs one too.
 */
export function needsApiKey(route: string | undefined, rawUrl: string): boolean {
  const path = route ?? canonicalPath(rawUrl);
  return path === '/v1' || path.startsWith('/v1/') || path === '/reso/odata' || path.startsWith('/reso/odata/');
}

/** {@link needsApiKey} for a request, by the route it matched (or its canonical path when it matched none). */
export const isApiRequest = (request: FastifyRequest): boolean =>
  needsApiKey(request.is404 ? undefined : request.routeOptions.url, request.url);
