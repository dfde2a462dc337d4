import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { identity as identitySchema, type Identity } from '@estate/contracts/accounts';
import type { NonceCache } from './nonce-cache';

export const IDENTITY_HEADER = 'x-estate-identity';
export const SIGNATURE_HEADER = 'x-estate-signature';
/** Where the client reached the gateway (`https://api.example.com`), for links a service writes into its answers. */
export const ORIGIN_HEADER = 'x-estate-origin';

/** How old a signed request may be. */
export const MAX_AGE_MS = 60_000;
/** How far ahead of this host's clock a signature may be dated (clock skew between hosts). */
export const MAX_FUTURE_MS = 5_000;

/** The processes that sign internal requests: the gateway for clients, and services reading from each other. */
export type Caller = 'gateway' | 'listings' | 'media' | 'leads' | 'webhooks';
const CALLERS: readonly Caller[] = ['gateway', 'listings', 'media', 'leads', 'webhooks'];

/** sha256 of a request body, base64url; an absent body is the empty one. */
export function bodyDigest(body?: string | Buffer | Uint8Array): string {
  return createHash('sha256')
    .update(body ?? '')
    .digest('base64url');
}

interface Signed {
  caller: Caller;
  timestamp: number;
  nonce: string;
  method: string;
  url: string;
  digest: string;
  identity: string;
}

function mac(secret: string, s: Signed): Buffer {
  // One field a line: none of them may hold a newline (checked on both sides), so fields cannot be shifted.
  return createHmac('sha256', secret)
    .update(
      ['estate-v2', s.caller, s.timestamp, s.nonce, s.method.toUpperCase(), s.url, s.digest, s.identity].join('\n'),
    )
    .digest();
}

export interface SignOptions {
  /** Who signs (checked by the receiving service against the callers it accepts). */
  caller: Caller;
  /** The current deployment secret. */
  secret: string;
  method: string;
  /** Path and query exactly as sent. */
  url: string;
  /** The body's digest (`bodyDigest`); the empty body's when omitted. */
  digest?: string;
  now?: number;
  nonce?: string;
}

/**
 * Headers for an internal request made for `who`: the identity and an HMAC binding it to the caller, the
 * method, path and query, the body's sha256, the time and a random nonce. A captured request cannot be
 * sent with another body, to another path, later than a minute after, or twice.
 */
export function signRequest(who: Identity, options: SignOptions): Record<string, string> {
  const signed: Signed = {
    caller: options.caller,
    timestamp: options.now ?? Date.now(),
    nonce: options.nonce ?? randomBytes(16).toString('base64url'),
    method: options.method,
    url: options.url,
    digest: options.digest ?? bodyDigest(),
    identity: Buffer.from(JSON.stringify(who)).toString('base64url'),
  };
  const v = mac(options.secret, signed).toString('base64url');
  return {
    [IDENTITY_HEADER]: signed.identity,
    [SIGNATURE_HEADER]: `c=${signed.caller},t=${signed.timestamp},n=${signed.nonce},d=${signed.digest},v2=${v}`,
  };
}

export type VerifyFailure = 'missing' | 'malformed' | 'stale' | 'future' | 'bad_signature' | 'caller' | 'replayed';

export type Verified =
  { ok: true; identity: Identity; caller: Caller; digest: string } | { ok: false; reason: VerifyFailure };

export interface VerifyOptions {
  /** The current secret first, then the previous one while a rotation is under way. */
  secrets: readonly string[];
  /** Callers this service accepts, and the methods each may use ('*' for any). */
  callers: Partial<Record<Caller, readonly string[] | '*'>>;
  nonces: NonceCache;
  method: string;
  url: string;
  now?: number;
}

const SIGNATURE = /^c=([a-z]+),t=(\d{1,15}),n=([A-Za-z0-9_-]{16,64}),d=([A-Za-z0-9_-]{43}),v2=([A-Za-z0-9_-]{43})$/;

/**
 * Checks the signature of an internal request's headers. The body is not seen here: the caller compares
 * the returned `digest` with the body's own once it has been read, before acting on it.
 */
export function verifyRequest(headers: Record<string, unknown>, options: VerifyOptions): Verified {
  const encoded = headers[IDENTITY_HEADER];
  const signature = headers[SIGNATURE_HEADER];
  if (typeof encoded !== 'string' || typeof signature !== 'string') return { ok: false, reason: 'missing' };
  const match = SIGNATURE.exec(signature);
  if (!match || !/^[A-Za-z0-9_-]+$/.test(encoded) || /[\r\n]/.test(options.url))
    return { ok: false, reason: 'malformed' };
  const caller = match[1] as Caller;
  if (!CALLERS.includes(caller)) return { ok: false, reason: 'malformed' };
  const signed: Signed = {
    caller,
    timestamp: Number(match[2]),
    nonce: match[3],
    method: options.method,
    url: options.url,
    digest: match[4],
    identity: encoded,
  };
  const now = options.now ?? Date.now();
  if (signed.timestamp < now - MAX_AGE_MS) return { ok: false, reason: 'stale' };
  if (signed.timestamp > now + MAX_FUTURE_MS) return { ok: false, reason: 'future' };
  const given = Buffer.from(match[5], 'base64url');
  const valid = options.secrets.some((secret) => {
    const expected = mac(secret, signed);
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
  if (!valid) return { ok: false, reason: 'bad_signature' };
  const allowed = options.callers[caller];
  if (!allowed || (allowed !== '*' && !allowed.includes(options.method.toUpperCase())))
    return { ok: false, reason: 'caller' };
  let who: Identity;
  try {
    who = identitySchema.parse(JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  // Only a request that is genuine takes a place in the cache: forged ones cannot fill it.
  if (!options.nonces.claim(signed.nonce, signed.timestamp, now)) return { ok: false, reason: 'replayed' };
  return { ok: true, identity: who, caller, digest: signed.digest };
}
