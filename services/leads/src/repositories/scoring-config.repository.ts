import { DuplicateKeyError, type DocumentCollection, type DocumentStore } from '@estate/store';
import type { ScoringSettings } from '../scoring.rules';

/** An account's scoring configuration; `rescoredVersion` trails `version` while leads are being rescored. */
export interface StoredScoringConfig {
  settings: ScoringSettings;
  version: number;
  updatedAt: string;
  rescoredVersion: number;
}

/** `rescorePending` makes the unfinished ones findable without comparing two fields (no `$expr` in the store port). */
type ConfigDoc = StoredScoringConfig & { id: string; rescorePending: boolean };

function toConfig(doc: ConfigDoc): StoredScoringConfig {
  return {
    settings: doc.settings,
    version: doc.version,
    updatedAt: doc.updatedAt,
    rescoredVersion: doc.rescoredVersion,
  };
}

export class ScoringConfigRepository {
  private constructor(private readonly collection: DocumentCollection<ConfigDoc>) {}

  static async open(store: DocumentStore): Promise<ScoringConfigRepository> {
    return new ScoringConfigRepository(
      await store.collection<ConfigDoc>('scoring_configs', [{ fields: { rescorePending: 1 } }]),
    );
  }

  async get(accountId: string): Promise<StoredScoringConfig | null> {
    const doc = await this.collection.findOne({ id: accountId });
    return doc ? toConfig(doc) : null;
  }

  /** Stores the defaults as version 1 unless the account has a configuration already; resolves to what is stored. */
  async getOrCreate(accountId: string, defaults: ScoringSettings, now: string): Promise<StoredScoringConfig> {
    const found = await this.get(accountId);
    if (found) return found;
    try {
      await this.collection.insertOne({
        id: accountId,
        settings: defaults,
        version: 1,
        updatedAt: now,
        rescoredVersion: 1,
        rescorePending: false,
      });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    return (await this.get(accountId))!;
  }

  async replace(
    accountId: string,
    settings: ScoringSettings,
    expectedVersion: number,
    now: string,
  ): Promise<StoredScoringConfig | null> {
    const doc = await this.collection.updateOne(
      { id: accountId, version: expectedVersion },
      { $set: { settings, version: expectedVersion + 1, updatedAt: now, rescorePending: true } },
    );
    return doc ? toConfig(doc) : null;
  }

  async markRescored(accountId: string, version: number): Promise<void> {
    await this.collection.updateOne(
      { id: accountId, version },
      { $set: { rescoredVersion: version, rescorePending: false } },
    );
  }

  /** Accounts whose leads still wait for a rescoring after a configuration change. */
  async pendingRescores(): Promise<{ accountId: string; version: number }[]> {
    return (await this.collection.find({ rescorePending: true }, {})).map((d) => ({
      accountId: d.id,
      version: d.version,
    }));
  }
}
