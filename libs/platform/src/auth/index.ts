import { createHmac, timingSafeEqual } from 'node:crypto';
import { identity as identitySchema, type Identity, type Role } from '@estate/contracts/accounts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling; set by the gateway's key check or by the signed-identity check. */
    identity: Identity | null;
  }
}

export type { Identity } from '@estate/contracts/accounts';

export const IDENTITY_HEADER = 'x-estate-identity';
export const SIGNATURE_HEADER = 'x-estate-signature';
const MAX_SKEW_SECONDS = 300;

function mac(secret: string, timestamp: number, method: string, url: string, encoded: string): string {
  return createHmac('sha256', secret)
    .update(`${timestamp}.${method.toUpperCase()}.${url}.${encoded}`)
    .digest('base64url');
}

/**
 * Headers the gateway adds when it forwards a request: the caller's identity and an HMAC over
 * it, the time, the method and the URL, so a captured header cannot be replayed elsewhere.
 */
export function signIdentity(
  who: Identity,
  secret: string,
  method: string,
  url: string,
  now = Date.now(),
): Record<string, string> {
  const encoded = Buffer.from(JSON.stringify(who)).toString('base64url');
  const t = Math.floor(now / 1000);
  return { [IDENTITY_HEADER]: encoded, [SIGNATURE_HEADER]: `t=${t},v1=${mac(secret, t, method, url, encoded)}` };
}

/** The identity a signed request carries, or null when the signature is missing, stale or wrong. */
export function verifyIdentity(
  headers: Record<string, unknown>,
  secret: string,
  method: string,
  url: string,
  now = Date.now(),
): Identity | null {
  const encoded = headers[IDENTITY_HEADER];
  const signature = headers[SIGNATURE_HEADER];
  if (typeof encoded !== 'string' || typeof signature !== 'string') return null;
  const match = /^t=(\d+),v1=([A-Za-z0-9_-]+)$/.exec(signature);
  if (!match) return null;
  const t = Number(match[1]);
  if (Math.abs(now / 1000 - t) > MAX_SKEW_SECONDS) return null;
  const expected = Buffer.from(mac(secret, t, method, url, encoded));
  const given = Buffer.from(match[2]);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    return identitySchema.parse(JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')));
  } catch {
    return null;
  }
}

/** Adds `request.identity` (null until an authentication hook sets it). */
export function decorateIdentity(app: FastifyInstance): void {
  if (!app.hasRequestDecorator('identity')) app.decorateRequest('identity', null);
}

/**
 * For a service behind the gateway: every `/v1` request must carry a valid signed identity.
 * A service port reached directly, without the gateway's signature, lets no one in.
 */
export function requireSignedIdentity(app: FastifyInstance, secret: string): void {
  decorateIdentity(app);
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    const who = verifyIdentity(request.headers, secret, request.method, request.url);
    if (!who) throw new AppError('unauthorized', 'This service only accepts requests forwarded by the gateway');
    request.identity = who;
  });
}

/** The caller, or 401 when the request is not authenticated. */
export function callerOf(request: FastifyRequest): Identity {
  if (!request.identity) throw new AppError('unauthorized', 'Send `Authorization: Bearer <api key>`');
  return request.identity;
}

/** Throws 403 unless the caller has one of the roles. */
export function assertRole(who: Identity, roles: readonly (Role | 'platform')[], action: string): void {
  if (!roles.includes(who.role)) {
    throw new AppError('forbidden', `A key with role ${who.role} may not ${action}`);
  }
}

/**
 * A route's `preValidation` hook: 403 for a caller without one of the roles, before the body or query is
 * validated (a caller who may not act learns nothing from validation errors). The service checks again.
 */
export function allowRoles(roles: readonly (Role | 'platform')[], action: string) {
  return async (request: FastifyRequest): Promise<void> => assertRole(callerOf(request), roles, action);
}

/** Who asks and under which request id: what every service method that acts for a caller takes. */
export interface RequestContext {
  who: Identity;
  requestId?: string;
}

/** The request context of an authenticated request (401 when it is not). */
export function requestContext(request: FastifyRequest): RequestContext {
  return { who: callerOf(request), requestId: request.id };
}
