import type { Role } from '@estate/contracts/accounts';
import type { DocumentCollection, DocumentStore } from '@estate/store';

export interface AccountDoc {
  id: string;
  name: string;
  /** The first account made on a fresh install; the embedded profile's bootstrap keys belong to it. */
  isDefault?: boolean;
  createdAt: string;
}

export interface ApiKeyDoc {
  id: string;
  /** Empty for the platform key, which belongs to no account. */
  accountId: string;
  name: string;
  role: Role | 'platform';
  agentId: string | null;
  /** sha256 of the secret; the secret itself is never stored. */
  hash: string;
  prefix: string;
  createdAt: string;
  revokedAt?: string;
}

export class AccessRepository {
  private constructor(readonly accounts: DocumentCollection<AccountDoc>, readonly keys: DocumentCollection<ApiKeyDoc>) {}

  static async open(store: DocumentStore): Promise<AccessRepository> {
    const accounts = await store.collection<AccountDoc>('accounts', [{ fields: { isDefault: 1 }, unique: true, sparse: true }]);
    const keys = await store.collection<ApiKeyDoc>('api_keys', [{ fields: { hash: 1 }, unique: true }, { fields: { accountId: 1, createdAt: 1 } }]);
    return new AccessRepository(accounts, keys);
  }
}
