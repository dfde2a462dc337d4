import { AppError } from '@estate/platform/errors';
import type { FastifyInstance } from 'fastify';
import type { AccessService } from '../access.service';

/** The bearer secret of a request, if it sent one. */
export function bearerOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/** Every `/v1` request must carry a live API key; the identity it maps to rides on the request. */
export function authenticateApiKeys(app: FastifyInstance, access: AccessService): void {
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    const secret = bearerOf(request.headers.authorization);
    if (!secret) throw new AppError('unauthorized', 'Send `Authorization: Bearer <api key>`');
    const who = await access.authenticate(secret);
    if (!who) throw new AppError('unauthorized', 'The API key is not valid or was revoked');
    request.identity = who;
  });
}
