import type { Account } from '@estate/contracts/accounts';
import { newId } from '@estate/platform/ids';
import type { AccessService } from './access.service';
import { toAccount } from './access.rules';
import type { AccessRepository, ApiKeyDoc } from './repositories/access.repository';

export interface BootstrapResult {
  account: Account;
  /** Secrets generated now (to be shown once); keys taken from the environment are not repeated. */
  generated: { admin?: string; platform?: string };
}

/**
 * First start of an installation: the default account with an admin key, and the platform key.
 * Keys given in the environment are used as they are (and added if missing on later starts); the
 * others are generated and returned once, to be printed.
 */
export class BootstrapService {
  constructor(private readonly deps: { repo: AccessRepository; access: AccessService; clock: () => Date }) {}

  async bootstrap(given: { adminKey?: string; platformKey?: string }): Promise<BootstrapResult> {
    const { repo, access } = this.deps;
    let account = await repo.findDefaultAccount();
    const generated: BootstrapResult['generated'] = {};
    let firstStart = false;
    if (!account) {
      // Replicas starting together race here; the unique index on isDefault lets one win.
      const fresh = {
        id: newId('acc'),
        name: 'Default account',
        isDefault: true as const,
        createdAt: this.deps.clock().toISOString(),
      };
      firstStart = await repo.insertDefaultAccount(fresh);
      account = firstStart ? fresh : (await repo.findDefaultAccount())!;
    }
    if (given.adminKey) await this.ensureKey(account.id, given.adminKey, { name: 'ADMIN_API_KEY', role: 'admin' });
    else if (firstStart)
      generated.admin = (await access.issueKey(account.id, { name: 'Initial admin key', role: 'admin' })).secret;
    if (given.platformKey) await this.ensureKey('', given.platformKey, { name: 'PLATFORM_API_KEY', role: 'platform' });
    else if (firstStart)
      generated.platform = (await access.issueKey('', { name: 'Platform key', role: 'platform' })).secret;
    return { account: toAccount(account), generated };
  }

  private async ensureKey(
    accountId: string,
    secret: string,
    meta: { name: string; role: ApiKeyDoc['role'] },
  ): Promise<void> {
    if (await this.deps.access.hasKey(secret)) return;
    const taken = await this.deps.access.issueKey(accountId, meta, secret);
    // A new value of the variable retires the key the previous value made: rotating it and restarting is enough.
    await this.deps.access.retireKeysNamed(accountId, meta, taken.id);
  }
}

/**
 * The banner that shows generated keys once, on the first start; empty when nothing was generated. `serving`: the
 * process prints it as it starts to serve (not the seed, which leaves the start to `npm start`).
 */
export function firstStartBanner(boot: BootstrapResult, baseUrl: string, serving = true): string {
  const { admin, platform } = boot.generated;
  if (!admin && !platform) return '';
  return [
    '',
    '  First start: keys for this installation (shown only now; store them safely)',
    ...(admin ? [`    admin key of the default account (${boot.account.id}):  ${admin}`] : []),
    ...(platform ? [`    platform key (creates accounts):  ${platform}`] : []),
    `  ${serving ? 'Try:' : 'Then `npm start`, and try:'}  curl -H "Authorization: Bearer <admin key>" ${baseUrl}/v1/listings`,
    '',
    '',
  ].join('\n');
}
