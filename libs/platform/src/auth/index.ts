import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import type { Identity, Role } from '@estate/contracts/accounts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import { isApiRequest } from './api-paths';
import { NonceCache } from './nonce-cache';
import { bodyDigest, MAX_AGE_MS, verifyRequest, type Caller } from './signed-request';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling; set by the gateway's key check or by the signed-identity check. */
    identity: Identity | null;
  }
}

export type { Identity } from '@estate/contracts/accounts';

export {
  bodyDigest,
  IDENTITY_HEADER,
  MAX_AGE_MS,
  ORIGIN_HEADER,
  signRequest,
  SIGNATURE_HEADER,
  verifyRequest,
  type Caller,
  type SignOptions,
  type Verified,
  type VerifyFailure,
} from './signed-request';
export { NonceCache } from './nonce-cache';
export { isApiRequest, needsApiKey } from './api-paths';

/**
 * Who may call whom inside the distributed profile. The gateway forwards every client request; a service
 * that reads another's resources (media and leads ask listings about a listing, webhooks reads leads and media)
 * may only read. The caller's name is inside the signed data.
 */
export const TRUSTED_CALLERS: Record<string, Partial<Record<Caller, readonly string[] | '*'>>> = {
  listings: { gateway: '*', media: ['GET'], leads: ['GET'] },
  // Listings reads galleries (RESO's Media) and writes the photos of feeds it syncs.
  media: { gateway: '*', webhooks: ['GET'], listings: ['GET', 'POST', 'PUT', 'DELETE'] },
  leads: { gateway: '*', webhooks: ['GET'] },
  webhooks: { gateway: '*' },
};

const kSignedDigest = Symbol('signedDigest');
const kBodyChecked = Symbol('bodyChecked');
type SignedRequest = FastifyRequest & { [kSignedDigest]?: string; [kBodyChecked]?: Promise<void> };

const bodyMismatch = () => new AppError('unauthorized', 'The request body does not match the one the gateway signed');

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Hashes a body that the route reads itself from the raw request (multipart uploads): a listener beside the
 * parser's own, so the digest is known when the last byte has arrived. Resolves once the body matched.
 */
function digestWhileStreaming(raw: NodeJS.ReadableStream, expected: string): Promise<void> {
  const hash = createHash('sha256');
  // Paused first: the listener must not start the flow before the route pipes the request into its parser.
  raw.pause();
  return new Promise<void>((resolve, reject) => {
    raw.on('data', (chunk: Buffer) => hash.update(chunk));
    raw.once('end', () => (hash.digest('base64url') === expected ? resolve() : reject(bodyMismatch())));
    raw.once('error', reject);
    raw.once('close', () => reject(new AppError('malformed_request', 'The request body broke off')));
  });
}

/**
 * For a service behind the gateway: every `/v1` request must carry a valid signature from a caller this
 * service accepts (`TRUSTED_CALLERS`), made with the current or the previous deployment secret, no older
 * than a minute and never seen before; its body must hash to the signed digest. A service port reached
 * directly, without the gateway's signature, lets no one in.
 */
export function requireSignedIdentity(
  app: FastifyInstance,
  options: {
    secrets: readonly string[];
    callers: Partial<Record<Caller, readonly string[] | '*'>>;
    nonces?: NonceCache;
  },
): void {
  decorateIdentity(app);
  const nonces = options.nonces ?? new NonceCache(MAX_AGE_MS + 5_000);
  const secrets = options.secrets.filter((s) => s.length > 0);
  app.addHook('onRequest', async (request) => {
    if (!isApiRequest(request)) return;
    const verified = verifyRequest(request.headers, {
      secrets,
      callers: options.callers,
      nonces,
      method: request.method,
      url: request.url,
    });
    if (!verified.ok) {
      request.log.warn({ reason: verified.reason }, 'internal request refused');
      throw new AppError('unauthorized', 'This service only accepts requests signed by the gateway');
    }
    if (!hasBody(request) && verified.digest !== bodyDigest()) throw bodyMismatch();
    request.identity = verified.identity;
    (request as SignedRequest)[kSignedDigest] = verified.digest;
  });
  app.addHook('preParsing', async (request, _reply, payload) => {
    const expected = (request as SignedRequest)[kSignedDigest];
    if (expected === undefined || !hasBody(request)) return payload;
    if (/^multipart\//i.test(request.headers['content-type'] ?? '')) {
      const checked = digestWhileStreaming(request.raw, expected);
      checked.catch(() => undefined); // awaited by the route through signedBodyComplete
      (request as SignedRequest)[kBodyChecked] = checked;
      return payload;
    }
    // Parsed bodies: checked at their end, before the route sees them.
    const hash = createHash('sha256');
    const checking = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
      flush(done) {
        done(hash.digest('base64url') === expected ? null : bodyMismatch());
      },
    });
    payload.on('error', (err) => checking.destroy(err));
    return payload.pipe(checking);
  });
}

/**
 * Resolves once a body the route read as a stream (a multipart upload) is known to be the signed one; a
 * route calls it after reading and before storing anything. Immediate for other bodies (checked on parsing)
 * and where no signature is required (the embedded profile, the gateway itself).
 */
export async function signedBodyComplete(request: FastifyRequest): Promise<void> {
  await (request as SignedRequest)[kBodyChecked];
}

/** Adds `request.identity` (null until an authentication hook sets it). */
export function decorateIdentity(app: FastifyInstance): void {
  if (!app.hasRequestDecorator('identity')) app.decorateRequest('identity', null);
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
