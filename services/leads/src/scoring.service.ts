import type { Identity } from '@estate/contracts/accounts';
import type { ScoringConfig, ScoringConfigInput } from '@estate/contracts/leads';
import { assertRole } from '@estate/platform/auth';
import { updateVersioned } from '@estate/store';
import type { Logger } from 'pino';
import { slugify } from './contact.rules';
import { TEAM_ADMINS } from './lead-access.rules';
import type { ChangeOrigin } from './lead.rules';
import type { LeadWriter } from './lead-writer.service';
import type { LeadRepository } from './repositories/lead.repository';
import type { ScoringConfigRepository, StoredScoringConfig } from './repositories/scoring-config.repository';
import { defaultScoringConfig } from './scoring.rules';

export interface ScoringDeps {
  configs: ScoringConfigRepository;
  leads: LeadRepository;
  writer: LeadWriter;
  clock: () => Date;
  log: Logger;
  /** How often unfinished rescorings (a process died during one) are looked for. */
  sweepMs?: number;
}

const RESCORE_BATCH = 100;

function view(stored: StoredScoringConfig): ScoringConfig {
  return {
    ...stored.settings,
    version: stored.version,
    updatedAt: stored.updatedAt,
    rescoring: stored.rescoredVersion < stored.version ? 'pending' : 'idle',
  };
}

/**
 * The scoring configuration of each account and the rescoring of its leads after a change. The
 * rescoring runs in the background; a change not yet applied to every lead is marked in the
 * stored configuration, so a restart (or another replica's sweep) finishes it.
 */
export class ScoringService {
  private readonly queue = new Set<string>();
  private running?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly deps: ScoringDeps) {}

  async get(who: Identity): Promise<ScoringConfig> {
    assertRole(who, TEAM_ADMINS, 'read the scoring configuration');
    return view(
      await this.deps.configs.getOrCreate(who.accountId, defaultScoringConfig, this.deps.clock().toISOString()),
    );
  }

  async put(who: Identity, input: ScoringConfigInput, ifMatch?: number): Promise<ScoringConfig> {
    assertRole(who, TEAM_ADMINS, 'change the scoring configuration');
    const settings = {
      ...input,
      sourceQuality: Object.fromEntries(Object.entries(input.sourceQuality).map(([source, q]) => [slugify(source), q])),
    };
    const now = () => this.deps.clock().toISOString();
    const saved = await updateVersioned({
      what: 'configuration',
      ifMatch,
      read: () => this.deps.configs.getOrCreate(who.accountId, defaultScoringConfig, now()),
      write: (current) => this.deps.configs.replace(who.accountId, settings, current.version, now()),
    });
    this.kick(who.accountId);
    return view(saved);
  }

  start(): void {
    this.stopped = false;
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.deps.sweepMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.running) await this.running;
  }

  /** Resolves when no rescoring is queued or running in this process. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private kick(accountId: string): void {
    if (this.stopped) return;
    this.queue.add(accountId);
    if (this.running) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      // Queued between the end of the drain and now.
      const next = this.queue.values().next();
      if (!next.done) this.kick(next.value);
    });
  }

  private async sweep(): Promise<void> {
    try {
      for (const pending of await this.deps.configs.pendingRescores()) this.kick(pending.accountId);
    } catch (err) {
      this.deps.log.warn({ err }, 'looking for unfinished rescorings failed; will retry');
    }
  }

  private async drain(): Promise<void> {
    for (const accountId of this.queue) {
      this.queue.delete(accountId);
      if (this.stopped) return;
      try {
        await this.rescore(accountId);
      } catch (err) {
        this.deps.log.error({ err, accountId }, 'rescoring failed; the next sweep retries');
      }
    }
  }

  /** Recomputes every engine score of the account with its current configuration (leads whose score is manual keep it). */
  private async rescore(accountId: string): Promise<void> {
    const config = await this.deps.configs.get(accountId);
    if (!config || config.rescoredVersion >= config.version) return;
    const origin: ChangeOrigin = { accountId, actor: { type: 'system', id: null, agentId: null } };
    let changed = 0;
    let failed = 0;
    let after: string | undefined;
    for (;;) {
      const batch = await this.deps.leads.find(
        { accountId, ...(after ? { id: { $gt: after } } : {}) },
        { sort: { id: 1 }, limit: RESCORE_BATCH },
      );
      for (const lead of batch) {
        if (this.stopped) return;
        try {
          // An empty change: the writer recomputes the score and writes only if it moved.
          if ((await this.deps.writer.change(origin, lead.id, () => ({}))).written) changed++;
        } catch (err) {
          failed++;
          this.deps.log.warn({ err, accountId, leadId: lead.id }, 'could not rescore a lead; the next sweep retries');
        }
      }
      if (batch.length < RESCORE_BATCH) break;
      after = batch[batch.length - 1].id;
    }
    if (failed === 0) await this.deps.configs.markRescored(accountId, config.version);
    this.deps.log.info(
      { accountId, version: config.version, changed, failed },
      'leads rescored after a scoring configuration change',
    );
  }
}
