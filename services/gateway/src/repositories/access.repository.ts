import type { Role } from '@estate/contracts/accounts';
import type { ApiKeyListQuery } from '@estate/contracts/accounts';
import { decodeCursor, type SortOrder } from '@estate/platform/pagination';
import { allOf, DuplicateKeyError, keyset, pageOf, type DocumentCollection, type DocumentStore } from '@estate/store';

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
  /** The agent's version when the key was made: its deactivation or deletion at a later version revokes the key. */
  agentVersion?: number;
  /** sha256 of the secret; the secret itself is never stored. */
  hash: string;
  prefix: string;
  createdAt: string;
  revokedAt?: string;
}

/** An OAuth2 access token issued for a key (RESO Web API client credentials); only its sha256 is kept. */
export interface AccessTokenDoc {
  id: string;
  hash: string;
  keyId: string;
  expiresAt: string;
}

const KEY_ORDER: SortOrder = { field: 'createdAt', direction: 1 };

/** Accounts and API keys. */
export class AccessRepository {
  private constructor(
    private readonly accounts: DocumentCollection<AccountDoc>,
    private readonly keys: DocumentCollection<ApiKeyDoc>,
    private readonly tokens: DocumentCollection<AccessTokenDoc>,
  ) {}

  static async open(store: DocumentStore): Promise<AccessRepository> {
    const accounts = await store.collection<AccountDoc>('accounts', [
      { fields: { isDefault: 1 }, unique: true, sparse: true },
    ]);
    const keys = await store.collection<ApiKeyDoc>('api_keys', [
      { fields: { hash: 1 }, unique: true },
      { fields: { accountId: 1, createdAt: 1 } },
      { fields: { accountId: 1, agentId: 1 } },
    ]);
    const tokens = await store.collection<AccessTokenDoc>('access_tokens', [
      { fields: { hash: 1 }, unique: true },
      { fields: { expiresAt: 1 } },
    ]);
    return new AccessRepository(accounts, keys, tokens);
  }

  async insertAccount(doc: AccountDoc): Promise<void> {
    await this.accounts.insertOne(doc);
  }

  /** Stores the default account unless one exists already; false when another writer made it first. */
  async insertDefaultAccount(doc: AccountDoc & { isDefault: true }): Promise<boolean> {
    try {
      await this.accounts.insertOne(doc);
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  findAccount(id: string): Promise<AccountDoc | null> {
    return this.accounts.findOne({ id });
  }

  findDefaultAccount(): Promise<AccountDoc | null> {
    return this.accounts.findOne({ isDefault: true });
  }

  listAccounts(): Promise<AccountDoc[]> {
    return this.accounts.find({}, { sort: { createdAt: 1, id: 1 } });
  }

  async insertKey(doc: ApiKeyDoc): Promise<void> {
    await this.keys.insertOne(doc);
  }

  /** The key with this hash, revoked or not. */
  findKey(hash: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ hash });
  }

  findLiveKey(hash: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ hash, revokedAt: { $exists: false } });
  }

  findLiveKeyById(id: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ id, revokedAt: { $exists: false } });
  }

  async insertToken(doc: AccessTokenDoc): Promise<void> {
    await this.tokens.insertOne(doc);
  }

  /** A token not yet expired at `now`. */
  findToken(hash: string, now: string): Promise<AccessTokenDoc | null> {
    return this.tokens.findOne({ hash, expiresAt: { $gt: now } });
  }

  /** Forgets expired tokens. */
  dropExpiredTokens(now: string): Promise<number> {
    return this.tokens.deleteMany({ expiresAt: { $lte: now } });
  }

  listLiveKeys(accountId: string): Promise<ApiKeyDoc[]> {
    return this.keys.find({ accountId, revokedAt: { $exists: false } }, { sort: { createdAt: 1, id: 1 } });
  }

  /** A page of the account's live keys, oldest first, and how many there are. */
  async pageLiveKeys(
    accountId: string,
    query: ApiKeyListQuery,
  ): Promise<{ items: ApiKeyDoc[]; nextCursor: string | null; total: number }> {
    const live = { accountId, revokedAt: { $exists: false } };
    const { sort, after } = keyset(KEY_ORDER, decodeCursor(query.cursor, accountId));
    const [fetched, total] = await Promise.all([
      this.keys.find(allOf([live, after]), { sort, limit: query.limit + 1 }),
      this.keys.count(live),
    ]);
    return { ...pageOf(fetched, query.limit, KEY_ORDER, accountId), total };
  }

  listLiveKeysOfAgent(accountId: string, agentId: string): Promise<ApiKeyDoc[]> {
    return this.keys.find({ accountId, agentId, revokedAt: { $exists: false } }, { sort: { createdAt: 1, id: 1 } });
  }

  /** Takes a revocation back (a revocation that would have left the account without an admin key). */
  async restoreKey(accountId: string, keyId: string): Promise<void> {
    await this.keys.updateOne({ id: keyId, accountId }, { $unset: { revokedAt: true } });
  }

  /** False when the account has no such live key. */
  async revokeKey(accountId: string, keyId: string, at: string): Promise<boolean> {
    return (
      (await this.keys.updateOne(
        { id: keyId, accountId, revokedAt: { $exists: false } },
        { $set: { revokedAt: at } },
      )) !== null
    );
  }
}
