import { randomBytes } from 'node:crypto';
import {
  API_KEY_REVOKED_SUBJECT,
  type Account,
  type ApiKey,
  type ApiKeyCreate,
  type ApiKeyListQuery,
  type ApiKeyRevoked,
  type Identity,
} from '@estate/contracts/accounts';
import { AppError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { hashSecret, identityOf, secretPrefix, toAccount, toApiKey } from './access.rules';
import type { AgentsReader } from './clients/leads.client';
import { ApiKeyCache } from './key-cache';
import type { AccessRepository, AccountDoc, ApiKeyDoc } from './repositories/access.repository';

export type ApiKeyWithSecret = ApiKey & { secret: string };

/** How long an access token of the RESO token endpoint stands for its key. */
export const ACCESS_TOKEN_SECONDS = 3600;

/** A new key's secret: 256 random bits. */
export function newSecret(): string {
  return `ek_${randomBytes(32).toString('base64url')}`;
}

/** Accounts and their API keys: who may call, as what. */
export class AccessService {
  private readonly cache: ApiKeyCache;

  constructor(
    private readonly deps: {
      repo: AccessRepository;
      clock: () => Date;
      /** How long a live key is trusted without reading the store (0, the default: always read). */
      keyCacheMs?: number;
      /** True when another process may have changed the keys (the cache is dropped then); see ApiKeyCache. */
      keysChangedElsewhere?: () => boolean;
      /** Tells every gateway replica that a key was revoked (transient notification). */
      notify?: (subject: string, data: ApiKeyRevoked) => void;
      /** Tells whether an agent key's `agentId` names an active agent of the account. */
      agents: AgentsReader;
    },
  ) {
    this.cache = new ApiKeyCache({ ttlMs: deps.keyCacheMs ?? 0, changedElsewhere: deps.keysChangedElsewhere });
  }

  async authenticate(secret: string): Promise<Identity | null> {
    return this.authenticateHash(hashSecret(secret));
  }

  /** The identity behind a key's sha256, or null when unknown or revoked. */
  async authenticateHash(hash: string): Promise<Identity | null> {
    const cached = this.cache.get(hash);
    if (cached) return cached;
    const generation = this.cache.generation;
    const key = (await this.deps.repo.findLiveKey(hash)) ?? (await this.keyOfToken(hash));
    if (!key) return null;
    const who = identityOf(key);
    this.cache.put(hash, who, generation);
    return who;
  }

  /** The live key an unexpired access token was issued for: revoking the key ends its tokens. */
  private async keyOfToken(hash: string): Promise<ApiKeyDoc | null> {
    const token = await this.deps.repo.findToken(hash, this.now());
    return token ? this.deps.repo.findLiveKeyById(token.keyId) : null;
  }

  /**
   * OAuth2 client credentials (the RESO Web API's token endpoint): `clientId` is a key's id and `clientSecret` the
   * key itself. Answers a bearer token that stands for the key for {@link ACCESS_TOKEN_SECONDS}, or why not.
   */
  async issueAccessToken(
    clientId: string,
    clientSecret: string,
  ): Promise<{ token: string; expiresIn: number } | { refused: 'invalid_client' | 'unauthorized_client' }> {
    const key = await this.deps.repo.findLiveKey(hashSecret(clientSecret));
    if (!key || key.id !== clientId) return { refused: 'invalid_client' };
    if (key.role !== 'admin' && key.role !== 'integration') return { refused: 'unauthorized_client' };
    const token = `rt_${randomBytes(32).toString('base64url')}`;
    const now = this.deps.clock();
    await this.deps.repo.dropExpiredTokens(now.toISOString());
    await this.deps.repo.insertToken({
      id: newId('tok'),
      hash: hashSecret(token),
      keyId: key.id,
      expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000).toISOString(),
    });
    return { token, expiresIn: ACCESS_TOKEN_SECONDS };
  }

  /** Another replica revoked a key: it leaves this replica's cache now. */
  keyRevoked(event: ApiKeyRevoked): void {
    this.cache.evictKey(event.keyId);
  }

  async createAccount(name: string): Promise<{ account: Account; adminKey: ApiKeyWithSecret }> {
    const account: AccountDoc = { id: newId('acc'), name, createdAt: this.now() };
    await this.deps.repo.insertAccount(account);
    const adminKey = await this.issueKey(account.id, { name: 'Initial admin key', role: 'admin' });
    return { account: toAccount(account), adminKey };
  }

  /**
   * Creates a key of the caller's account. An agent key must name an active agent of the account
   * (422 on `agentId` otherwise; another account's agent reads as unknown) and remembers the agent's
   * version. The agent is read again after the key is stored: an agent deactivated or deleted in
   * between has its keys revoked by the consumer of its event, which either sees this key or
   * happened before the second read, which then takes the key back.
   */
  async createKey(who: Identity, input: ApiKeyCreate, requestId?: string): Promise<ApiKeyWithSecret> {
    const accountId = who.accountId;
    if (!(await this.deps.repo.findAccount(accountId)))
      throw new AppError('account_not_found', `Account ${accountId} does not exist`);
    const agentId = input.role === 'agent' ? input.agentId : undefined;
    if (!agentId) return this.issueKey(accountId, input);
    const { version } = await this.activeAgent(who, agentId, requestId);
    const key = await this.issueKey(accountId, input, newSecret(), version);
    try {
      await this.activeAgent(who, agentId, requestId);
    } catch (err) {
      await this.deps.repo.revokeKey(accountId, key.id, this.now());
      throw err;
    }
    return key;
  }

  private async activeAgent(who: Identity, agentId: string, requestId?: string): Promise<{ version: number }> {
    const state = await this.deps.agents.state(who, agentId, requestId);
    if (state?.active) return state;
    const message = state ? 'names an inactive agent' : 'is not an agent of this account';
    throw new AppError('validation_failed', `agentId ${message}`, { errors: [{ path: 'agentId', message }] });
  }

  /**
   * Revokes the live keys bound to an agent that was deactivated or deleted at `agentVersion`, and
   * tells every replica. A key made for a later version (the agent active again) stays, so a late or
   * repeated event changes nothing. Returns the revoked key ids.
   */
  async revokeAgentKeys(accountId: string, agentId: string, agentVersion: number): Promise<string[]> {
    const revoked: string[] = [];
    for (const key of await this.deps.repo.listLiveKeysOfAgent(accountId, agentId)) {
      if ((key.agentVersion ?? 0) >= agentVersion) continue;
      if (!(await this.deps.repo.revokeKey(accountId, key.id, this.now()))) continue;
      this.cache.evictKey(key.id);
      this.deps.notify?.(API_KEY_REVOKED_SUBJECT, { keyId: key.id, accountId });
      revoked.push(key.id);
    }
    return revoked;
  }

  /** A page of the account's live keys (without secrets), oldest first. */
  async pageKeys(
    accountId: string,
    query: ApiKeyListQuery,
  ): Promise<{ items: ApiKey[]; nextCursor: string | null; total: number }> {
    const page = await this.deps.repo.pageLiveKeys(accountId, query);
    return { ...page, items: page.items.map(toApiKey) };
  }

  async listKeys(accountId: string): Promise<ApiKey[]> {
    return (await this.deps.repo.listLiveKeys(accountId)).map(toApiKey);
  }

  /**
   * Revokes a key at once. The account's last live admin key stays (409): without it nobody could manage
   * the account over HTTP. Checked again after the write, so two revocations racing for the last two
   * admin keys cannot both win; the one that finds none left takes its own back.
   */
  async revokeKey(accountId: string, keyId: string): Promise<void> {
    const live = await this.deps.repo.listLiveKeys(accountId);
    const target = live.find((k) => k.id === keyId);
    if (!target) throw new AppError('api_key_not_found', `API key ${keyId} does not exist`);
    const lastAdmin = () =>
      new AppError('last_admin_key', 'This is the last admin key of the account; create another admin key first');
    if (target.role === 'admin' && live.filter((k) => k.role === 'admin').length <= 1) throw lastAdmin();
    if (!(await this.deps.repo.revokeKey(accountId, keyId, this.now())))
      throw new AppError('api_key_not_found', `API key ${keyId} does not exist`);
    if (target.role === 'admin' && !(await this.deps.repo.listLiveKeys(accountId)).some((k) => k.role === 'admin')) {
      await this.deps.repo.restoreKey(accountId, keyId);
      throw lastAdmin();
    }
    this.cache.evictKey(keyId);
    this.deps.notify?.(API_KEY_REVOKED_SUBJECT, { keyId, accountId });
  }

  /** Revokes the live keys of the account with this name and role, but `keep` (keys a variable made before). */
  async retireKeysNamed(
    accountId: string,
    meta: { name: string; role: ApiKeyDoc['role'] },
    keep: string,
  ): Promise<void> {
    for (const key of await this.deps.repo.listLiveKeys(accountId)) {
      if (key.id === keep || key.name !== meta.name || key.role !== meta.role) continue;
      await this.deps.repo.revokeKey(accountId, key.id, this.now());
      this.cache.evictKey(key.id);
      this.deps.notify?.(API_KEY_REVOKED_SUBJECT, { keyId: key.id, accountId });
    }
  }

  /** The account the first start made, if there is one yet. */
  async defaultAccount(): Promise<Account | null> {
    const doc = await this.deps.repo.findDefaultAccount();
    return doc ? toAccount(doc) : null;
  }

  async listAccounts(): Promise<Account[]> {
    return (await this.deps.repo.listAccounts()).map(toAccount);
  }

  /** Stores a key with the secret given (one taken from the environment), or a new one returned once. */
  async issueKey(
    accountId: string,
    input: { name: string; role: ApiKeyDoc['role']; agentId?: string },
    secret = newSecret(),
    agentVersion?: number,
  ): Promise<ApiKeyWithSecret> {
    const doc: ApiKeyDoc = {
      id: newId('key'),
      accountId,
      name: input.name,
      role: input.role,
      agentId: input.agentId ?? null,
      ...(agentVersion !== undefined ? { agentVersion } : {}),
      hash: hashSecret(secret),
      prefix: secretPrefix(secret),
      createdAt: this.now(),
    };
    await this.deps.repo.insertKey(doc);
    return { ...toApiKey(doc), secret };
  }

  /** Whether a key with this secret exists, revoked or not. */
  async hasKey(secret: string): Promise<boolean> {
    return (await this.deps.repo.findKey(hashSecret(secret))) !== null;
  }

  private now(): string {
    return this.deps.clock().toISOString();
  }
}
