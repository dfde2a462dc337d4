import type { Identity } from '@estate/contracts/accounts';
import { bodyDigest, signRequest, type Caller, type requireSignedIdentity } from '@estate/platform/auth';

export const TEST_SIGNING_SECRET = 'test-signing-secret-0123456789abcdef-0123456789';

/** What a service under test trusts: the test secret, the gateway for everything and the service readers for GETs. */
export const TEST_TRUST: Parameters<typeof requireSignedIdentity>[1] = {
  secrets: [TEST_SIGNING_SECRET],
  callers: { gateway: '*', media: ['GET'], webhooks: ['GET'] },
};

export function identityFor(
  accountId: string,
  role: Identity['role'] = 'admin',
  agentId: string | null = null,
): Identity {
  return { accountId, keyId: `key_${accountId}_${role}`, role, agentId };
}

/** The bytes `app.inject` sends for a payload: strings and buffers as they are, anything else as JSON. */
function bytesOf(payload: unknown): string | Buffer | undefined {
  if (payload === undefined || payload === null) return undefined;
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) return payload;
  return JSON.stringify(payload);
}

/** Headers a request needs to reach a service directly, as if forwarded by the gateway (body included in the signature). */
export function asCaller(
  who: Identity,
  method: string,
  url: string,
  payload?: unknown,
  caller: Caller = 'gateway',
): Record<string, string> {
  return signRequest(who, { caller, secret: TEST_SIGNING_SECRET, method, url, digest: bodyDigest(bytesOf(payload)) });
}
