import type { Identity } from '@estate/contracts/accounts';
import {
  routingRuleCreate,
  type RoutingRule,
  type RoutingRuleCreate,
  type RoutingRulePatch,
  type RoutingSettings,
  type RoutingSettingsPut,
} from '@estate/contracts/leads';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import { updateVersioned } from '@estate/store';
import type { Logger } from 'pino';
import { TEAM_ADMINS } from './lead-access.rules';
import type { AgentRepository } from './repositories/agent.repository';
import type { RoutingRepository } from './repositories/routing.repository';
import { compareRules, DEFAULT_ROUTING_SETTINGS } from './routing.rules';

export interface RoutingRulesDeps {
  agents: AgentRepository;
  routing: RoutingRepository;
  clock: () => Date;
  log: Logger;
}

/** The team's routing configuration: its rules and its team default. */
export class RoutingRulesService {
  constructor(private readonly deps: RoutingRulesDeps) {}

  async createRule(who: Identity, input: RoutingRuleCreate): Promise<RoutingRule> {
    assertRole(who, TEAM_ADMINS, 'manage routing rules');
    await this.assertAgentsExist(who.accountId, input.agentIds, input.weights);
    const now = this.deps.clock().toISOString();
    const rule: RoutingRule = {
      id: newId('rule'),
      ...input,
      weights: input.weights ?? null,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    return this.deps.routing.insertRule(who.accountId, rule);
  }

  async listRules(
    who: Identity,
    query: { limit: number; cursor?: string },
  ): Promise<{ items: RoutingRule[]; nextCursor: string | null; total: number }> {
    assertRole(who, TEAM_ADMINS, 'read routing rules');
    // An account has few rules: they are ordered in memory exactly as routing tries them, and paged by that key.
    const ordered = (await this.deps.routing.rulesOf(who.accountId)).sort(compareRules);
    const after = decodeCursor(query.cursor, who.accountId);
    const key = after?.v;
    if (after && !(Array.isArray(key) && typeof key[0] === 'number' && typeof key[1] === 'string')) {
      throw new AppError('invalid_cursor', 'The cursor is not one this list issued; start again without it');
    }
    const rest = after
      ? ordered.filter(
          (r) =>
            compareRules(r, {
              priority: (key as [number, string])[0],
              createdAt: (key as [number, string])[1],
              id: after.id,
            }) > 0,
        )
      : ordered;
    const items = rest.slice(0, query.limit);
    const last = items[items.length - 1];
    const nextCursor =
      rest.length > query.limit
        ? encodeCursor({ v: [last.priority, last.createdAt], id: last.id }, who.accountId)
        : null;
    return { items, nextCursor, total: ordered.length };
  }

  async getRule(who: Identity, id: string): Promise<RoutingRule> {
    assertRole(who, TEAM_ADMINS, 'read routing rules');
    const rule = await this.deps.routing.getRule(who.accountId, id);
    if (!rule) throw notFound('rule_not_found', 'Routing rule', id);
    return rule;
  }

  async updateRule(who: Identity, id: string, patch: RoutingRulePatch, ifMatch?: number): Promise<RoutingRule> {
    return updateVersioned({
      what: 'rule',
      ifMatch,
      read: () => this.getRule(who, id),
      write: async (current) => {
        const { id: _id, version, createdAt, updatedAt, weights, ...writable } = current;
        const parsed = routingRuleCreate.safeParse(
          applyMergePatch({ ...writable, ...(weights ? { weights } : {}) }, patch),
        );
        if (!parsed.success) throw validationError(parsed.error, [], 'The rule would not be valid after this change');
        await this.assertAgentsExist(who.accountId, parsed.data.agentIds, parsed.data.weights);
        const next: RoutingRule = {
          ...current,
          ...parsed.data,
          weights: parsed.data.weights ?? null,
          version: version + 1,
          updatedAt: this.deps.clock().toISOString(),
        };
        return this.deps.routing.replaceRule(who.accountId, next, version);
      },
    });
  }

  async deleteRule(who: Identity, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    const current = await this.getRule(who, id);
    if (ifMatch !== undefined && ifMatch !== current.version)
      throw new AppError('version_mismatch', `The rule is at version ${current.version}, not ${ifMatch}`);
    if (!(await this.deps.routing.deleteRule(who.accountId, id, ifMatch))) {
      throw ifMatch !== undefined
        ? new AppError('version_mismatch', 'The rule changed meanwhile')
        : notFound('rule_not_found', 'Routing rule', id);
    }
    return { id, deleted: true };
  }

  async getSettings(who: Identity): Promise<RoutingSettings> {
    assertRole(who, TEAM_ADMINS, 'read routing settings');
    return this.settingsOf(who.accountId);
  }

  async putSettings(who: Identity, input: RoutingSettingsPut, ifMatch?: number): Promise<RoutingSettings> {
    assertRole(who, TEAM_ADMINS, 'change routing settings');
    await this.assertAgentsExist(who.accountId, input.defaultAgentIds, undefined, 'defaultAgentIds');
    return updateVersioned({
      what: 'team default',
      ifMatch,
      read: () => this.settingsOf(who.accountId),
      write: (current) =>
        this.deps.routing.putSettings(
          who.accountId,
          { ...input, version: current.version + 1, updatedAt: this.deps.clock().toISOString() },
          current.version,
        ),
    });
  }

  /** The account's team default, stored at version 1 the first time it is asked for. */
  private async settingsOf(accountId: string): Promise<RoutingSettings> {
    for (;;) {
      const found = await this.deps.routing.getSettings(accountId);
      if (found) return found;
      const created = await this.deps.routing.putSettings(
        accountId,
        { ...DEFAULT_ROUTING_SETTINGS, version: 1, updatedAt: this.deps.clock().toISOString() },
        null,
      );
      if (created) return created;
    }
  }

  private async assertAgentsExist(
    accountId: string,
    ids: readonly string[],
    weights: Record<string, number> | undefined,
    path = 'agentIds',
  ): Promise<void> {
    const known = new Set((await this.deps.agents.allOf(accountId)).map((a) => a.id));
    const errors = [
      ...ids.flatMap((id, i) =>
        known.has(id) ? [] : [{ path: `${path}.${i}`, message: `agent ${id} does not exist in this account` }],
      ),
      ...Object.keys(weights ?? {}).flatMap((id) =>
        known.has(id) ? [] : [{ path: `weights.${id}`, message: `agent ${id} does not exist in this account` }],
      ),
    ];
    if (errors.length > 0) throw new AppError('validation_failed', 'Unknown agents', { errors });
  }
}
