import { createHash, hash } from 'node:crypto';
import type { Account, ApiKey, Identity } from '@estate/contracts/accounts';
import type { AccountDoc, ApiKeyDoc } from './repositories/access.repository';

/**
 * Keys are 256 random bits: a fast hash is enough (nothing to brute-force), and lookups stay O(1). Every request
 * hashes its key: the one-shot `crypto.hash` (Node 20.12 and later) is several times cheaper than a Hash object.
 */
export const hashSecret: (secret: string) => string =
  typeof hash === 'function'
    ? (secret) => hash('sha256', secret, 'hex')
    : (secret) => createHash('sha256').update(secret).digest('hex');

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
