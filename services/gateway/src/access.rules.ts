import { createHash } from 'node:crypto';
import type { Account, ApiKey, Identity } from '@estate/contracts/accounts';
import type { AccountDoc, ApiKeyDoc } from './repositories/access.repository';

/** Keys are 256 random bits: a fast hash is enough (nothing to brute-force), and lookups stay O(1). */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** The first characters of a secret, kept to tell keys apart in listings. */
export const secretPrefix = (secret: string): string => secret.slice(0, 10);

/** A key as its owner sees it: never the secret nor its hash. */
export function toApiKey(doc: ApiKeyDoc): ApiKey {
  return {
    id: doc.id,
    name: doc.name,
    role: doc.role as ApiKey['role'],
    agentId: doc.agentId,
    prefix: doc.prefix,
    createdAt: doc.createdAt,
  };
}

export const toAccount = (doc: AccountDoc): Account => ({ id: doc.id, name: doc.name, createdAt: doc.createdAt });

/** Who calls with a live key. */
export const identityOf = (key: ApiKeyDoc): Identity => ({
  accountId: key.accountId,
  keyId: key.id,
  role: key.role,
  agentId: key.agentId,
});

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
 * Whether a request needs an API key: everything under `/v1`. Decided by the route it matched (a pattern
 * the router reached after decoding the path), so no spelling of a URL reaches a `/v1` route without a
 * key; a path that matched no route, by its canonical form, so probing unknown `/v1` paths needs one too.
 */
export function needsApiKey(route: string | undefined, rawUrl: string): boolean {
  const path = route ?? canonicalPath(rawUrl);
  return path === '/v1' || path.startsWith('/v1/');
}
