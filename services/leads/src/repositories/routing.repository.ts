import type { RoutingRule, RoutingSettings } from '@estate/contracts/leads';
import {
  DuplicateKeyError,
  findOwned,
  type DocumentCollection,
  type DocumentStore,
  replaceFields,
  storable,
} from '@estate/store';

type RuleDoc = Omit<RoutingRule, 'weights'> & { accountId: string; weights?: Record<string, number> };
type SettingsDoc = RoutingSettings & { id: string };
interface CounterDoc {
  id: string;
  n: number;
}

const RULE_FIELDS = [
  'name',
  'priority',
  'enabled',
  'conditions',
  'strategy',
  'agentIds',
  'weights',
  'version',
  'updatedAt',
] as const;

function toRule(doc: RuleDoc): RoutingRule {
  const { accountId, ...rest } = doc;
  return { ...rest, weights: rest.weights ?? null };
}

function toSettings(doc: SettingsDoc): RoutingSettings {
  const { id, ...rest } = doc;
  return rest;
}

/** Routing rules, the team default and the turn counters of round robin and weighted routing. */
export class RoutingRepository {
  private constructor(
    private readonly rules: DocumentCollection<RuleDoc>,
    private readonly settings: DocumentCollection<SettingsDoc>,
    private readonly counters: DocumentCollection<CounterDoc>,
  ) {}

  static async open(store: DocumentStore): Promise<RoutingRepository> {
    return new RoutingRepository(
      await store.collection<RuleDoc>('routing_rules', [{ fields: { accountId: 1, priority: 1 } }]),
      await store.collection<SettingsDoc>('routing_settings'),
      await store.collection<CounterDoc>('routing_counters'),
    );
  }

  async insertRule(accountId: string, rule: RoutingRule): Promise<RoutingRule> {
    await this.rules.insertOne(storable({ ...rule, accountId }) as RuleDoc);
    return rule;
  }

  async getRule(accountId: string, id: string): Promise<RoutingRule | null> {
    const doc = await findOwned(this.rules, id, accountId);
    return doc ? toRule(doc) : null;
  }

  async rulesOf(accountId: string): Promise<RoutingRule[]> {
    return (await this.rules.find({ accountId }, { sort: { priority: 1, createdAt: 1, id: 1 } })).map(toRule);
  }

  async replaceRule(accountId: string, next: RoutingRule, expectedVersion: number): Promise<RoutingRule | null> {
    const doc = await this.rules.updateOne(
      { id: next.id, accountId, version: expectedVersion },
      replaceFields(next, RULE_FIELDS),
    );
    return doc ? toRule(doc) : null;
  }

  async deleteRule(accountId: string, id: string, expectedVersion?: number): Promise<boolean> {
    return this.rules.deleteOne({
      id,
      accountId,
      ...(expectedVersion !== undefined ? { version: expectedVersion } : {}),
    });
  }

  /** Takes an agent out of every rule of the account (the agent was deleted); each rule changed gets a new version. */
  async forgetAgent(accountId: string, agentId: string, now: string): Promise<void> {
    for (const rule of await this.rules.find({ accountId, agentIds: agentId }, {})) {
      const weights = rule.weights
        ? Object.fromEntries(Object.entries(rule.weights).filter(([id]) => id !== agentId))
        : undefined;
      await this.replaceRule(
        accountId,
        toRule({
          ...rule,
          agentIds: rule.agentIds.filter((id) => id !== agentId),
          weights,
          version: rule.version + 1,
          updatedAt: now,
        }),
        rule.version,
      );
    }
    await this.settings.updateOne(
      { id: accountId, defaultAgentIds: agentId },
      { $pull: { defaultAgentIds: agentId }, $inc: { version: 1 }, $set: { updatedAt: now } },
    );
  }

  async getSettings(accountId: string): Promise<RoutingSettings | null> {
    const doc = await this.settings.findOne({ id: accountId });
    return doc ? toSettings(doc) : null;
  }

  /** Creates the settings at version 1, or replaces them if still at `expectedVersion`; null on a lost race. */
  async putSettings(
    accountId: string,
    next: RoutingSettings,
    expectedVersion: number | null,
  ): Promise<RoutingSettings | null> {
    if (expectedVersion === null) {
      try {
        await this.settings.insertOne({ ...next, id: accountId });
        return next;
      } catch (err) {
        if (err instanceof DuplicateKeyError) return null;
        throw err;
      }
    }
    const doc = await this.settings.updateOne({ id: accountId, version: expectedVersion }, { $set: { ...next } });
    return doc ? toSettings(doc) : null;
  }

  /**
   * The next turn (1, 2, 3, ...) of a rotation: one atomic `$inc` on a document, so concurrent
   * routings in any number of replicas each get a different turn.
   */
  async nextTurn(key: string): Promise<number> {
    for (;;) {
      const doc = await this.counters.updateOne({ id: key }, { $inc: { n: 1 } });
      if (doc) return doc.n;
      try {
        await this.counters.insertOne({ id: key, n: 0 });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
  }

  /** The turn the next routing would get, without taking it (previews). */
  async peekTurn(key: string): Promise<number> {
    return ((await this.counters.findOne({ id: key }))?.n ?? 0) + 1;
  }
}
