import { createHash, randomBytes } from 'node:crypto';
import type { Account, ApiKey, ApiKeyCreate, Identity } from '@estate/contracts/accounts';
import { AppError } from '@estate/platform/errors';
import { DuplicateKeyError } from '@estate/store';
import type { AccessRepository, AccountDoc, ApiKeyDoc } from './repositories/access.repository';

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Keys are 256 random bits; a fast hash is enough (nothing to brute-force), and lookups stay O(1). */
export function newSecret(): string {
  return `ek_${randomBytes(32).toString('base64url')}`;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

export type ApiKeyWithSecret = ApiKey & { secret: string };

function toApiKey(doc: ApiKeyDoc): ApiKey {
  return { id: doc.id, name: doc.name, role: doc.role as ApiKey['role'], agentId: doc.agentId, prefix: doc.prefix, createdAt: doc.createdAt };
}

const toAccount = (doc: AccountDoc): Account => ({ id: doc.id, name: doc.name, createdAt: doc.createdAt });

export interface BootstrapResult {
  account: Account;
  /** Secrets generated now (to be shown once); keys taken from the environment are not repeated. */
  generated: { admin?: string; platform?: string };
}

/** Accounts and API keys: who may call, as what. */
export class AccessService {
  constructor(private readonly deps: { repo: AccessRepository; clock: () => Date }) {}

  async authenticate(secret: string): Promise<Identity | null> {
    return this.authenticateHash(hashSecret(secret));
  }

  /** The identity behind a key's sha256, or null when unknown or revoked. */
  async authenticateHash(hash: string): Promise<Identity | null> {
    const key = await this.deps.repo.keys.findOne({ hash, revokedAt: { $exists: false } });
    if (!key) return null;
    return { accountId: key.accountId, keyId: key.id, role: key.role, agentId: key.agentId };
  }

  async createAccount(name: string): Promise<{ account: Account; adminKey: ApiKeyWithSecret }> {
    const account: AccountDoc = { id: newId('acc'), name, createdAt: this.now() };
    await this.deps.repo.accounts.insertOne(account);
    const adminKey = await this.insertKey(account.id, { name: 'Initial admin key', role: 'admin' });
    return { account: toAccount(account), adminKey };
  }

  async createKey(accountId: string, input: ApiKeyCreate): Promise<ApiKeyWithSecret> {
    if (!(await this.deps.repo.accounts.findOne({ id: accountId }))) throw new AppError('account_not_found', `Account ${accountId} does not exist`);
    return this.insertKey(accountId, input);
  }

  async listKeys(accountId: string): Promise<ApiKey[]> {
    const docs = await this.deps.repo.keys.find({ accountId, revokedAt: { $exists: false } }, { sort: { createdAt: 1, id: 1 } });
    return docs.map(toApiKey);
  }

  /** Revokes at once: the next request with the key is refused. */
  async revokeKey(accountId: string, keyId: string): Promise<void> {
    const done = await this.deps.repo.keys.updateOne({ id: keyId, accountId, revokedAt: { $exists: false } }, { $set: { revokedAt: this.now() } });
    if (!done) throw new AppError('api_key_not_found', `API key ${keyId} does not exist`);
  }

  /** The account the embedded profile's first start made, if there is one yet. */
  async defaultAccount(): Promise<Account | null> {
    const doc = await this.deps.repo.accounts.findOne({ isDefault: true });
    return doc ? toAccount(doc) : null;
  }

  async listAccounts(): Promise<Account[]> {
    return (await this.deps.repo.accounts.find({}, { sort: { createdAt: 1, id: 1 } })).map(toAccount);
  }

  /**
   * First start: make the default account with an admin key and the platform key. Keys given
   * in the environment are used as they are (and added if missing on later starts); the others
   * are generated and returned once, to be printed.
   */
  async bootstrap(given: { adminKey?: string; platformKey?: string }): Promise<BootstrapResult> {
    let account = await this.deps.repo.accounts.findOne({ isDefault: true });
    const generated: BootstrapResult['generated'] = {};
    let firstStart = false;
    if (!account) {
      // Replicas starting together race here; the unique index on isDefault lets one win.
      const fresh: AccountDoc = { id: newId('acc'), name: 'Default account', isDefault: true, createdAt: this.now() };
      try {
        await this.deps.repo.accounts.insertOne(fresh);
        account = fresh;
        firstStart = true;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        account = (await this.deps.repo.accounts.findOne({ isDefault: true }))!;
      }
    }
    if (given.adminKey) await this.ensureKey(account.id, given.adminKey, { name: 'ADMIN_API_KEY', role: 'admin' });
    else if (firstStart) generated.admin = (await this.insertKey(account.id, { name: 'Initial admin key', role: 'admin' })).secret;
    if (given.platformKey) await this.ensureKey('', given.platformKey, { name: 'PLATFORM_API_KEY', role: 'platform' });
    else if (firstStart) generated.platform = (await this.insertKey('', { name: 'Platform key', role: 'platform' })).secret;
    return { account: toAccount(account), generated };
  }

  private async ensureKey(accountId: string, secret: string, meta: { name: string; role: ApiKeyDoc['role'] }): Promise<void> {
    const existing = await this.deps.repo.keys.findOne({ hash: hashSecret(secret) });
    if (existing) return;
    await this.insertKey(accountId, meta, secret);
  }

  private async insertKey(accountId: string, input: { name: string; role: ApiKeyDoc['role']; agentId?: string }, secret = newSecret()): Promise<ApiKeyWithSecret> {
    const doc: ApiKeyDoc = {
      id: newId('key'),
      accountId,
      name: input.name,
      role: input.role,
      agentId: input.agentId ?? null,
      hash: hashSecret(secret),
      prefix: secret.slice(0, 10),
      createdAt: this.now(),
    };
    await this.deps.repo.keys.insertOne(doc);
    return { ...toApiKey(doc), secret };
  }

  private now(): string {
    return this.deps.clock().toISOString();
  }
}

/** The banner that shows generated keys once, on the first start; empty when nothing was generated. */
export function firstStartBanner(boot: BootstrapResult, baseUrl: string): string {
  const { admin, platform } = boot.generated;
  if (!admin && !platform) return '';
  return [
    '',
    '  First start: keys for this installation (shown only now; store them safely)',
    ...(admin ? [`    admin key of the default account (${boot.account.id}):  ${admin}`] : []),
    ...(platform ? [`    platform key (creates accounts):  ${platform}`] : []),
    `  Try:  curl -H "Authorization: Bearer <admin key>" ${baseUrl}/v1/listings`,
    '',
    '',
  ].join('\n');
}
