import { parse } from 'node:querystring';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AccessService } from '../access.service';

/** The RESO Web API's OAuth2 token endpoint (client credentials), served by the gateway, which owns the keys. */
export const RESO_TOKEN_PATH = '/reso/token';

type OAuthError = 'invalid_request' | 'invalid_client' | 'unauthorized_client' | 'unsupported_grant_type';

function refuse(reply: FastifyReply, status: number, error: OAuthError, description: string): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('application/json')
    .send({ error, error_description: description });
}

/** `client_id` and `client_secret` from HTTP Basic (client_secret_basic) or the form (client_secret_post). */
function credentials(authorization: string | undefined, form: Record<string, unknown>): [string, string] | null {
  const basic = /^Basic\s+(\S+)$/i.exec(authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    return [decodeURIComponent(decoded.slice(0, colon)), decodeURIComponent(decoded.slice(colon + 1))];
  }
  const id = form.client_id;
  const secret = form.client_secret;
  return typeof id === 'string' && typeof secret === 'string' ? [id, secret] : null;
}

/**
 * `POST /reso/token` with `grant_type=client_credentials`: `client_id` is an API key's id, `client_secret` the key.
 * Answers `{ access_token, token_type: "Bearer", expires_in }` (RFC 6749 §4.4), errors as RFC 6749 §5.2. Its
 * contract is OAuth2's, so it is not in the OpenAPI document.
 */
export async function resoTokenRoutes(app: FastifyInstance, { access }: { access: AccessService }): Promise<void> {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    (_request, body, done) => done(null, parse(body as string)),
  );
  app.post(RESO_TOKEN_PATH, { schema: { hide: true } }, async (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    if (form.grant_type !== 'client_credentials')
      return refuse(reply, 400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported');
    const given = credentials(request.headers.authorization, form);
    if (!given) return refuse(reply, 400, 'invalid_request', 'Send client_id and client_secret');
    const issued = await access.issueAccessToken(given[0], given[1]);
    if ('refused' in issued)
      return issued.refused === 'invalid_client'
        ? refuse(reply, 401, 'invalid_client', 'The client credentials are not those of a live API key')
        : refuse(reply, 400, 'unauthorized_client', 'Only admin and integration keys may read the RESO Web API');
    return reply
      .header('cache-control', 'no-store')
      .header('pragma', 'no-cache')
      .send({ access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn });
  });
}
