import { randomBytes } from 'node:crypto';
import type { Identity } from '@estate/contracts/accounts';
import {
  routingRuleCreate,
  type Agent,
  type RoutingDecision,
  type RoutingPreviewBody,
  type RoutingRule,
  type RoutingRuleCreate,
  type RoutingRulePatch,
  type RoutingSettings,
  type RoutingSettingsPut,
  type RoutingStrategy,
} from '@estate/contracts/leads';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import type { Logger } from 'pino';
import { slugify } from './contact';
import { TEAM_ADMINS, changeContext, type RequestContext } from './lead.access';
import type { ChangeContext, LeadWriter } from './lead-writer';
import { isOpen } from './pipeline';
import type { AgentRepository } from './repositories/agent.repository';
import type { LeadRecord, LeadRepository } from './repositories/lead.repository';
import type { ListingSummaryRepository } from './repositories/listing-summary.repository';
import type { RoutingRepository } from './repositories/routing.repository';
import {
  agentsCovering,
  agentsNamed,
  compareRules,
  describeStrategy,
  ineligibility,
  matchRule,
  offerOrder,
  rulesInOrder,
  usesTicket,
  type LeadFacts,
  type RoutingAgent,
} from './routing';
import { updateVersioned } from './versioned';

export interface RoutingDeps {
  writer: LeadWriter;
  leads: LeadRepository;
  agents: AgentRepository;
  routing: RoutingRepository;
  listings: ListingSummaryRepository;
  clock: () => Date;
  log: Logger;
}

const DEFAULT_SETTINGS = { defaultAgentIds: [] as string[], defaultStrategy: 'round_robin' as RoutingStrategy };
/** Rounds of least-loaded choice while concurrent routings change the loads (each round, one of them wins). */
const LEAST_LOADED_ROUNDS = 25;

export const newRuleId = () => `rule_${randomBytes(12).toString('base64url')}`;

/** One place routing may look: a rule that matched, or the team default. */
interface Step {
  ruleId: string | null;
  name: string;
  strategy: RoutingStrategy;
  candidates: RoutingAgent[];
  weights: Record<string, number> | null;
  turnKey: string;
}

interface Decision {
  agentId: string;
  ruleId: string | null;
  strategy: RoutingStrategy;
  reason: string;
  /** The capacity slot taken for the lead (real routing only). */
  token?: string;
  steps: RoutingDecision['steps'];
}

const toRoutingAgent = (a: Agent): RoutingAgent => ({ id: a.id, name: a.name, active: a.active, capacity: a.capacity, openLeads: a.openLeads, areas: a.areas });

export class RoutingService {
  constructor(private readonly deps: RoutingDeps) {}

  /** `POST /v1/leads/:id/route`: an admin asks for the lead to be (re)routed. */
  async route(ctx: RequestContext, leadId: string): Promise<LeadRecord> {
    assertRole(ctx.who, TEAM_ADMINS, 'route leads');
    return this.routeLead(changeContext(ctx), leadId);
  }

  /** Routes a lead: the first matching rule with an eligible agent, else the team default; 409 when nobody can take it. */
  async routeLead(wc: ChangeContext, leadId: string): Promise<LeadRecord> {
    const stored = await this.deps.leads.get(wc.accountId, leadId);
    if (!stored) throw notFound('lead_not_found', 'Lead', leadId);
    assertOpen(stored.lead);
    const decision = await this.decide(wc.accountId, await this.factsOf(stored.lead), true);
    const token = decision.token!;
    let routed: LeadRecord | undefined;
    try {
      const assignedAt = this.deps.clock().toISOString();
      routed = (
        await this.deps.writer.change(wc, leadId, (cur) => {
          assertOpen(cur);
          return {
            fields: { agentId: decision.agentId },
            assignment: { ruleId: decision.ruleId, strategy: decision.strategy, reason: decision.reason, assignedAt },
            slot: { agentId: decision.agentId, token },
          };
        })
      ).lead;
      return routed;
    } finally {
      // The slot was not needed after all (the write failed, or the lead stayed with an agent it already held a slot on).
      if (routed?.slot?.token !== token) await this.deps.writer.release(decision.agentId, token);
    }
  }

  /** Who would get the lead, taking no slot and no turn. */
  async preview(who: Identity, body: RoutingPreviewBody): Promise<RoutingDecision> {
    assertRole(who, TEAM_ADMINS, 'preview routing');
    let facts: LeadFacts;
    if (body.leadId) {
      const stored = await this.deps.leads.get(who.accountId, body.leadId);
      if (!stored) throw notFound('lead_not_found', 'Lead', body.leadId);
      facts = await this.factsOf(stored.lead);
    } else {
      const now = this.deps.clock().toISOString();
      const source = slugify(body.source ?? 'unknown');
      const interests = (body.propertyInterests ?? []).map((i) => ({ listingId: i.listingId }));
      // Scored as it would be on capture: the inquiry is its first activity.
      const breakdown = await this.deps.writer.scoreOf({
        accountId: who.accountId,
        email: body.email,
        phone: body.phone,
        source,
        activityCounts: { inquiry: 1 },
        lastActivityByType: { inquiry: now },
        createdAt: now,
        propertyInterests: interests,
      });
      facts = await this.facts(who.accountId, source, breakdown.engineScore, interests[0]?.listingId);
    }
    try {
      const d = await this.decide(who.accountId, facts, false);
      return { agentId: d.agentId, ruleId: d.ruleId, strategy: d.strategy, reason: d.reason, steps: d.steps };
    } catch (err) {
      if (err instanceof AppError && err.code === 'no_agent_available') {
        return { agentId: null, ruleId: null, strategy: null, reason: err.detail, steps: (err.extra.fields?.steps as RoutingDecision['steps']) ?? [] };
      }
      throw err;
    }
  }

  private async factsOf(lead: LeadRecord): Promise<LeadFacts> {
    return this.facts(lead.accountId, lead.source, lead.score, lead.propertyInterests[0]?.listingId);
  }

  private async facts(accountId: string, source: string, score: number, firstListingId: string | undefined): Promise<LeadFacts> {
    const listing = firstListingId ? (await this.deps.listings.resolve(accountId, [firstListingId])).get(firstListingId) : undefined;
    return {
      source,
      score,
      propertyType: listing?.propertyType ?? null,
      listPrice: listing?.price.listPrice ?? null,
      postalCode: listing?.address.postalCode ?? null,
      city: listing?.address.city ?? null,
    };
  }

  /**
   * Walks the matching rules, then the team default. With `reserve`, takes the rule's turn and a
   * capacity slot on the chosen agent (both atomic in the store, so concurrent routings in any
   * replica never share a turn nor overfill an agent); without, only looks.
   */
  private async decide(accountId: string, facts: LeadFacts, reserve: boolean): Promise<Decision> {
    const [rules, agents, settings] = await Promise.all([
      this.deps.routing.rulesOf(accountId),
      this.deps.agents.allOf(accountId),
      this.deps.routing.getSettings(accountId),
    ]);
    const all = agents.map(toRoutingAgent);
    const byId = new Map(all.map((a) => [a.id, a]));
    const steps: RoutingDecision['steps'] = [];
    const plan: Step[] = [];
    for (const rule of rulesInOrder(rules)) {
      const m = matchRule(rule.conditions, facts, slugify);
      const name = `rule "${rule.name}" (priority ${rule.priority})`;
      if (!m.matched) {
        steps.push({ ruleId: rule.id, name, outcome: 'not_matched', detail: m.detail });
        continue;
      }
      const candidates = rule.agentIds.length > 0 ? agentsNamed(rule.agentIds, byId) : agentsCovering(all, facts);
      plan.push({ ruleId: rule.id, name, strategy: rule.strategy, candidates, weights: rule.weights, turnKey: `${accountId}|rule|${rule.id}` });
    }
    const team = settings ?? DEFAULT_SETTINGS;
    plan.push({
      ruleId: null,
      name: 'team default',
      strategy: team.defaultStrategy,
      candidates: team.defaultAgentIds.length > 0 ? agentsNamed(team.defaultAgentIds, byId) : all,
      weights: null,
      turnKey: `${accountId}|default`,
    });

    for (const step of plan) {
      const chosen = await this.tryStep(accountId, step, reserve);
      if ('detail' in chosen) {
        steps.push({ ruleId: step.ruleId, name: step.name, outcome: 'no_eligible_agent', detail: chosen.detail });
        continue;
      }
      const reason = `${step.name}: ${describeStrategy(step.strategy, step.candidates.length, chosen.turn)} chose ${chosen.agent.name} (${chosen.agent.id})`;
      steps.push({ ruleId: step.ruleId, name: step.name, outcome: 'chosen', detail: reason });
      return { agentId: chosen.agent.id, ruleId: step.ruleId, strategy: step.strategy, reason, token: chosen.token, steps };
    }
    const why = steps.filter((s) => s.outcome === 'no_eligible_agent').map((s) => `${s.name}: ${s.detail}`).join('; ');
    throw new AppError('no_agent_available', `No eligible agent for this lead (${why}); it stays unassigned`, { fields: { steps } });
  }

  private async tryStep(accountId: string, step: Step, reserve: boolean): Promise<{ agent: RoutingAgent; turn: number; token?: string } | { detail: string }> {
    const nobody = (candidates: RoutingAgent[]) => ({
      detail: candidates.length === 0 ? 'no candidate agents' : `no eligible agent (${candidates.map((a) => `${a.id} ${ineligibility(a)}`).join(', ')})`,
    });
    if (!step.candidates.some((a) => !ineligibility(a))) return nobody(step.candidates);
    const turn = usesTicket(step.strategy) ? await (reserve ? this.deps.routing.nextTurn(step.turnKey) : this.deps.routing.peekTurn(step.turnKey)) : 0;
    const now = this.deps.clock();

    if (step.strategy === 'least_loaded' && reserve) {
      // Take a slot only if the agent still has the load we chose it by; otherwise look again.
      let candidates = step.candidates;
      for (let round = 0; round < LEAST_LOADED_ROUNDS; round++) {
        const agent = offerOrder('least_loaded', candidates, turn, null).find((a) => !ineligibility(a));
        if (!agent) return nobody(candidates);
        const token = await this.deps.agents.reserve(accountId, agent.id, now, agent.openLeads);
        if (token) return { agent, turn, token };
        const fresh = new Map((await this.deps.agents.allOf(accountId)).map((a) => [a.id, toRoutingAgent(a)]));
        candidates = candidates.map((c) => fresh.get(c.id)).filter((a): a is RoutingAgent => a !== undefined);
      }
      // Loads kept moving: settle for any agent with room, least loaded first.
      step = { ...step, candidates };
    }

    const order = offerOrder(step.strategy, step.candidates, turn, step.weights).filter((a) => !ineligibility(a));
    if (!reserve) return order.length > 0 ? { agent: order[0], turn } : nobody(step.candidates);
    for (const agent of order) {
      const token = await this.deps.agents.reserve(accountId, agent.id, now);
      if (token) return { agent, turn, token };
    }
    // Concurrent routings took the last slots: say how the agents stand now.
    const fresh = new Map((await this.deps.agents.allOf(accountId)).map((a) => [a.id, toRoutingAgent(a)]));
    const current = step.candidates.map((c) => fresh.get(c.id)).filter((a): a is RoutingAgent => a !== undefined);
    return current.some((a) => !ineligibility(a)) ? { detail: 'every eligible agent filled up while routing' } : nobody(current);
  }

  // --- rules ---------------------------------------------------------------------------------

  async createRule(who: Identity, input: RoutingRuleCreate): Promise<RoutingRule> {
    assertRole(who, TEAM_ADMINS, 'manage routing rules');
    await this.assertAgentsExist(who.accountId, input.agentIds, input.weights);
    const now = this.deps.clock().toISOString();
    const rule: RoutingRule = { id: newRuleId(), ...input, weights: input.weights ?? null, version: 1, createdAt: now, updatedAt: now };
    return this.deps.routing.insertRule(who.accountId, rule);
  }

  async listRules(who: Identity, query: { limit: number; cursor?: string }): Promise<{ items: RoutingRule[]; nextCursor: string | null; total: number }> {
    assertRole(who, TEAM_ADMINS, 'read routing rules');
    // An account has few rules: they are ordered in memory exactly as routing tries them, and paged by that key.
    const ordered = (await this.deps.routing.rulesOf(who.accountId)).sort(compareRules);
    const after = decodeCursor(query.cursor);
    const key = after?.v;
    if (after && !(Array.isArray(key) && typeof key[0] === 'number' && typeof key[1] === 'string')) {
      throw new AppError('invalid_cursor', 'The cursor is not one this list issued; start again without it');
    }
    const rest = after ? ordered.filter((r) => compareRules(r, { priority: (key as [number, string])[0], createdAt: (key as [number, string])[1], id: after.id }) > 0) : ordered;
    const items = rest.slice(0, query.limit);
    const last = items[items.length - 1];
    const nextCursor = rest.length > query.limit ? encodeCursor({ v: [last.priority, last.createdAt], id: last.id }) : null;
    return { items, nextCursor, total: ordered.length };
  }

  async getRule(who: Identity, id: string): Promise<RoutingRule> {
    assertRole(who, TEAM_ADMINS, 'read routing rules');
    const rule = await this.deps.routing.getRule(who.accountId, id);
    if (!rule) throw notFound('rule_not_found', 'Routing rule', id);
    return rule;
  }

  async updateRule(who: Identity, id: string, patch: RoutingRulePatch, ifMatch?: number): Promise<RoutingRule> {
    return updateVersioned('rule', ifMatch, () => this.getRule(who, id), async (current) => {
      const { id: _id, version, createdAt, updatedAt, weights, ...writable } = current;
      const parsed = routingRuleCreate.safeParse(applyMergePatch({ ...writable, ...(weights ? { weights } : {}) }, patch));
      if (!parsed.success) throw validationError(parsed.error, [], 'The rule would not be valid after this change');
      await this.assertAgentsExist(who.accountId, parsed.data.agentIds, parsed.data.weights);
      const next: RoutingRule = { ...current, ...parsed.data, weights: parsed.data.weights ?? null, version: version + 1, updatedAt: this.deps.clock().toISOString() };
      return this.deps.routing.replaceRule(who.accountId, next, version);
    });
  }

  async deleteRule(who: Identity, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    const current = await this.getRule(who, id);
    if (ifMatch !== undefined && ifMatch !== current.version) throw new AppError('version_mismatch', `The rule is at version ${current.version}, not ${ifMatch}`);
    if (!(await this.deps.routing.deleteRule(who.accountId, id, ifMatch))) {
      throw ifMatch !== undefined ? new AppError('version_mismatch', 'The rule changed meanwhile') : notFound('rule_not_found', 'Routing rule', id);
    }
    return { id, deleted: true };
  }

  // --- team default --------------------------------------------------------------------------

  async getSettings(who: Identity): Promise<RoutingSettings> {
    assertRole(who, TEAM_ADMINS, 'read routing settings');
    return this.settingsOf(who.accountId);
  }

  private async settingsOf(accountId: string): Promise<RoutingSettings> {
    for (;;) {
      const found = await this.deps.routing.getSettings(accountId);
      if (found) return found;
      const created = await this.deps.routing.putSettings(accountId, { ...DEFAULT_SETTINGS, version: 1, updatedAt: this.deps.clock().toISOString() }, null);
      if (created) return created;
    }
  }

  async putSettings(who: Identity, input: RoutingSettingsPut, ifMatch?: number): Promise<RoutingSettings> {
    assertRole(who, TEAM_ADMINS, 'change routing settings');
    await this.assertAgentsExist(who.accountId, input.defaultAgentIds, undefined, 'defaultAgentIds');
    return updateVersioned('team default', ifMatch, () => this.settingsOf(who.accountId), (current) =>
      this.deps.routing.putSettings(who.accountId, { ...input, version: current.version + 1, updatedAt: this.deps.clock().toISOString() }, current.version),
    );
  }

  private async assertAgentsExist(accountId: string, ids: readonly string[], weights: Record<string, number> | undefined, path = 'agentIds'): Promise<void> {
    const known = new Set((await this.deps.agents.allOf(accountId)).map((a) => a.id));
    const errors = [
      ...ids.flatMap((id, i) => (known.has(id) ? [] : [{ path: `${path}.${i}`, message: `agent ${id} does not exist in this account` }])),
      ...Object.keys(weights ?? {}).flatMap((id) => (known.has(id) ? [] : [{ path: `weights.${id}`, message: `agent ${id} does not exist in this account` }])),
    ];
    if (errors.length > 0) throw new AppError('validation_failed', 'Unknown agents', { errors });
  }
}

function assertOpen(lead: LeadRecord): void {
  if (!isOpen(lead.status)) throw new AppError('conflict', `The lead is ${lead.status}; only leads in an open stage are routed`);
}

