import { hashSecret, identityOf, secretPrefix, toApiKey } from './access.rules';
import type { ApiKeyDoc } from './repositories/access.repository';

const doc: ApiKeyDoc = {
  id: 'key_1',
  accountId: 'acc_1',
  name: 'feed',
  role: 'agent',
  agentId: 'agt_1',
  hash: hashSecret('ek_secret_value_0123456789'),
  prefix: secretPrefix('ek_secret_value_0123456789'),
  createdAt: '2025-01-01T00:00:00.000Z',
};

describe('access rules', () => {
  it('hashes a secret to a stable sha256 hex, different per secret', () => {
    expect(hashSecret('a')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret('a')).toBe(hashSecret('a'));
    expect(hashSecret('b')).not.toBe(hashSecret('a'));
  });

  it('shows a key to its owner without its hash', () => {
    expect(toApiKey({ ...doc, revokedAt: '2025-01-02T00:00:00.000Z' })).toEqual({
      id: 'key_1',
      name: 'feed',
      role: 'agent',
      agentId: 'agt_1',
      prefix: 'ek_secret_',
      createdAt: '2025-01-01T00:00:00.000Z',
    });
  });

  it('maps a key to the identity that calls with it', () => {
    expect(identityOf(doc)).toEqual({ accountId: 'acc_1', keyId: 'key_1', role: 'agent', agentId: 'agt_1' });
    expect(identityOf({ ...doc, accountId: '', role: 'platform', agentId: null })).toEqual({
      accountId: '',
      keyId: 'key_1',
      role: 'platform',
      agentId: null,
    });
  });
});
