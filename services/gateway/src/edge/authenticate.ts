import { AppError } from '@estate/platform/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashSecret, type AccessService } from '../access.service';

const hashes = new WeakMap<FastifyRequest, string | null>();

/** sha256 of the request's bearer secret (null without one), computed once per request. */
export function keyHashOf(request: FastifyRequest): string | null {
  let hash = hashes.get(request);
  if (hash === undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    hash = match ? hashSecret(match[1]) : null;
    hashes.set(request, hash);
  }
  return hash;
}

/** Every `/v1` request must carry a live API key; the identity it maps to rides on the request. */
export function authenticateApiKeys(app: FastifyInstance, access: AccessService): void {
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    const hash = keyHashOf(request);
    if (!hash) throw new AppError('unauthorized', 'Send `Authorization: Bearer <api key>`');
    const who = await access.authenticateHash(hash);
    if (!who) throw new AppError('unauthorized', 'The API key is not valid or was revoked');
    request.identity = who;
  });
}
