import type { Identity } from '@estate/contracts/accounts';
import { signIdentity } from '@estate/platform/auth';

export const TEST_SIGNING_SECRET = 'test-signing-secret-0123456789abcdef-0123456789';

export function identityFor(
  accountId: string,
  role: Identity['role'] = 'admin',
  agentId: string | null = null,
): Identity {
  return { accountId, keyId: `key_${accountId}_${role}`, role, agentId };
}

/** Headers a request needs to reach a service directly, as if forwarded by the gateway. */
export function asCaller(who: Identity, method: string, url: string): Record<string, string> {
  return signIdentity(who, TEST_SIGNING_SECRET, method, url);
}
