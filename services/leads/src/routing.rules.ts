import type { PropertyType } from '@estate/contracts/listings';
import type { Agent, RoutingDecision, RoutingSettings, RoutingStrategy, RuleConditions } from '@estate/contracts/leads';

/** What routing needs to know of an agent. */
export interface RoutingAgent {
  id: string;
  name: string;
  active: boolean;
  capacity: number;
  openLeads: number;
  areas: string[];
}

export interface RoutingRuleView {
  id: string;
  name: string;
  priority: number;
  enabled: boolean;
  conditions: RuleConditions;
  strategy: RoutingStrategy;
  agentIds: string[];
  weights: Record<string, number> | null;
  createdAt: string;
}

/** A lead as routing sees it: its own fields and its first property interest (SPEC section 7). */
export interface LeadFacts {
  source: string;
  score: number;
  propertyType: PropertyType | null;
  listPrice: number | null;
  postalCode: string | null;
  city: string | null;
}

/** One place routing may look: a rule that matched, or the team default. */
export interface RoutingStep {
  ruleId: string | null;
  name: string;
  strategy: RoutingStrategy;
  candidates: RoutingAgent[];
  weights: Record<string, number> | null;
  /** The counter of this step's turns (round robin, weighted). */
  turnKey: string;
}

export type StepReport = RoutingDecision['steps'][number];
type TeamDefault = Pick<RoutingSettings, 'defaultAgentIds' | 'defaultStrategy'>;

/** The team default of an account that has set none: round robin over every agent. */
export const DEFAULT_ROUTING_SETTINGS: TeamDefault = Object.freeze({
  defaultAgentIds: [],
  defaultStrategy: 'round_robin',
});

export const toRoutingAgent = (a: Agent): RoutingAgent => ({
  id: a.id,
  name: a.name,
  active: a.active,
  capacity: a.capacity,
  openLeads: a.openLeads,
  areas: a.areas,
});

const norm = (s: string) => s.trim().toLowerCase();

/** Lowest priority first; ties by age, then id, so the order never flickers. */
export function compareRules(
  a: Pick<RoutingRuleView, 'priority' | 'createdAt' | 'id'>,
  b: Pick<RoutingRuleView, 'priority' | 'createdAt' | 'id'>,
): number {
  return a.priority - b.priority || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);
}

/** The enabled rules, in the order routing tries them. */
export function rulesInOrder<R extends RoutingRuleView>(rules: readonly R[]): R[] {
  return rules.filter((r) => r.enabled).sort(compareRules);
}

/** Whether every condition of a rule holds for the lead, and if not, the first one that fails. */
export function matchRule(
  conditions: RuleConditions,
  facts: LeadFacts,
  slug: (s: string) => string,
): { matched: boolean; detail: string } {
  const fail = (detail: string) => ({ matched: false, detail });
  const c = conditions;
  if (c.sources?.length && !c.sources.map(slug).includes(facts.source))
    return fail(`source ${facts.source} is not one of ${c.sources.map(slug).join(', ')}`);
  if (c.minScore !== undefined && facts.score < c.minScore) return fail(`score ${facts.score} is below ${c.minScore}`);
  if (c.propertyTypes?.length) {
    if (!facts.propertyType) return fail('the lead has no known property interest (property type)');
    if (!c.propertyTypes.includes(facts.propertyType))
      return fail(`property type ${facts.propertyType} is not one of ${c.propertyTypes.join(', ')}`);
  }
  if (c.minPrice !== undefined || c.maxPrice !== undefined) {
    if (facts.listPrice === null) return fail('the lead has no known property interest (price)');
    if (c.minPrice !== undefined && facts.listPrice < c.minPrice)
      return fail(`price ${facts.listPrice} is below ${c.minPrice}`);
    if (c.maxPrice !== undefined && facts.listPrice > c.maxPrice)
      return fail(`price ${facts.listPrice} is above ${c.maxPrice}`);
  }
  if (c.postalCodes?.length || c.cities?.length) {
    const inPostal = facts.postalCode !== null && (c.postalCodes ?? []).map(norm).includes(norm(facts.postalCode));
    const inCity = facts.city !== null && (c.cities ?? []).map(norm).includes(norm(facts.city));
    if (!inPostal && !inCity)
      return fail(
        `location ${[facts.postalCode, facts.city].filter(Boolean).join(' ') || '(unknown)'} is outside the rule's postal codes and cities`,
      );
  }
  return { matched: true, detail: 'all conditions hold' };
}

/** Why an agent cannot take a lead now, or null when it can. */
export function ineligibility(agent: RoutingAgent): string | null {
  if (!agent.active) return 'inactive';
  if (agent.openLeads >= agent.capacity) return `at capacity (${agent.openLeads}/${agent.capacity})`;
  return null;
}

/** Agents whose areas cover the lead's first interest (postal code or city). */
export function agentsCovering(agents: readonly RoutingAgent[], facts: LeadFacts): RoutingAgent[] {
  const places = [facts.postalCode, facts.city].filter((p): p is string => p !== null).map(norm);
  if (places.length === 0) return [];
  return agents.filter((a) => a.areas.some((area) => places.includes(norm(area))));
}

/** The candidates named by id, in the order given (unknown ids are skipped: the agent was deleted). */
export function agentsNamed(ids: readonly string[], agents: ReadonlyMap<string, RoutingAgent>): RoutingAgent[] {
  return ids.map((id) => agents.get(id)).filter((a): a is RoutingAgent => a !== undefined);
}

export function usesTicket(strategy: RoutingStrategy): boolean {
  return strategy === 'round_robin' || strategy === 'weighted';
}

const sequences = new Map<string, string[]>();
const MAX_CACHED_SEQUENCES = 200;

/**
 * One cycle of weighted turns: each agent appears exactly `weight` times, spread evenly (its k-th
 * turn sits at (k + ½) / weight of the cycle). Ticket t takes turn (t - 1) mod the cycle length.
 */
export function weightedCycle(agentIds: readonly string[], weights: Record<string, number> | null): string[] {
  const key = JSON.stringify([agentIds, weights]);
  const cached = sequences.get(key);
  if (cached) return cached;
  const turns: { at: number; order: number; id: string }[] = [];
  agentIds.forEach((id, order) => {
    const w = weights?.[id] ?? 1;
    for (let k = 0; k < w; k++) turns.push({ at: (k + 0.5) / w, order, id });
  });
  const cycle = turns.sort((a, b) => a.at - b.at || a.order - b.order).map((t) => t.id);
  if (sequences.size >= MAX_CACHED_SEQUENCES) sequences.delete(sequences.keys().next().value as string);
  sequences.set(key, cycle);
  return cycle;
}

/**
 * The order in which to offer the lead to the candidates. The first is the strategy's choice;
 * the rest are who gets it when that one turns out ineligible or fills up meanwhile.
 * `ticket` (1, 2, 3, ...) is the rule's atomic counter for round robin and weighted.
 */
export function offerOrder(
  strategy: RoutingStrategy,
  candidates: readonly RoutingAgent[],
  ticket: number,
  weights: Record<string, number> | null,
): RoutingAgent[] {
  if (candidates.length === 0) return [];
  switch (strategy) {
    case 'round_robin': {
      const start = (ticket - 1) % candidates.length;
      return [...candidates.slice(start), ...candidates.slice(0, start)];
    }
    case 'weighted': {
      const cycle = weightedCycle(
        candidates.map((c) => c.id),
        weights,
      );
      if (cycle.length === 0) return [];
      const byId = new Map(candidates.map((c) => [c.id, c]));
      const start = (ticket - 1) % cycle.length;
      const order: RoutingAgent[] = [];
      for (let i = 0; i < cycle.length && order.length < byId.size; i++) {
        const agent = byId.get(cycle[(start + i) % cycle.length])!;
        if (!order.includes(agent)) order.push(agent);
      }
      return order;
    }
    case 'least_loaded':
      // Fewest open leads first; then the most spare room; then the listed order.
      return candidates
        .map((agent, order) => ({ agent, order }))
        .sort(
          (a, b) => a.agent.openLeads - b.agent.openLeads || b.agent.capacity - a.agent.capacity || a.order - b.order,
        )
        .map((x) => x.agent);
    case 'specific_agent':
      return [...candidates];
  }
}

const strategyNames: Record<RoutingStrategy, string> = {
  round_robin: 'round robin',
  weighted: 'weighted',
  least_loaded: 'least loaded',
  specific_agent: 'specific agent',
};

export function describeStrategy(strategy: RoutingStrategy, candidates: number, ticket: number): string {
  return `${strategyNames[strategy]} over ${candidates} candidate${candidates === 1 ? '' : 's'}${usesTicket(strategy) ? ` (turn ${ticket})` : ''}`;
}

/**
 * Where routing looks for an agent, in order: the matching enabled rules, then the team default.
 * `skipped` reports the rules that did not match (the first steps of the decision).
 */
export function routingPlan(
  accountId: string,
  input: {
    rules: readonly RoutingRuleView[];
    agents: readonly RoutingAgent[];
    settings: TeamDefault | null;
    facts: LeadFacts;
    slug: (s: string) => string;
  },
): { plan: RoutingStep[]; skipped: StepReport[] } {
  const byId = new Map(input.agents.map((a) => [a.id, a]));
  const skipped: StepReport[] = [];
  const plan: RoutingStep[] = [];
  for (const rule of rulesInOrder(input.rules)) {
    const m = matchRule(rule.conditions, input.facts, input.slug);
    const name = `rule "${rule.name}" (priority ${rule.priority})`;
    if (!m.matched) {
      skipped.push({ ruleId: rule.id, name, outcome: 'not_matched', detail: m.detail });
      continue;
    }
    const candidates =
      rule.agentIds.length > 0 ? agentsNamed(rule.agentIds, byId) : agentsCovering(input.agents, input.facts);
    plan.push({
      ruleId: rule.id,
      name,
      strategy: rule.strategy,
      candidates,
      weights: rule.weights,
      turnKey: `${accountId}|rule|${rule.id}`,
    });
  }
  const team = input.settings ?? DEFAULT_ROUTING_SETTINGS;
  plan.push({
    ruleId: null,
    name: 'team default',
    strategy: team.defaultStrategy,
    candidates: team.defaultAgentIds.length > 0 ? agentsNamed(team.defaultAgentIds, byId) : [...input.agents],
    weights: null,
    turnKey: `${accountId}|default`,
  });
  return { plan, skipped };
}

/** Why none of these candidates can take the lead. */
export function nobodyEligible(candidates: readonly RoutingAgent[]): string {
  return candidates.length === 0
    ? 'no candidate agents'
    : `no eligible agent (${candidates.map((a) => `${a.id} ${ineligibility(a)}`).join(', ')})`;
}

/** Why a step chose its agent. */
export function choiceReason(step: RoutingStep, agent: RoutingAgent, turn: number): string {
  return `${step.name}: ${describeStrategy(step.strategy, step.candidates.length, turn)} chose ${agent.name} (${agent.id})`;
}

/** Why nobody got the lead, from the steps routing went through. */
export function noAgentReason(steps: readonly StepReport[]): string {
  const why = steps
    .filter((s) => s.outcome === 'no_eligible_agent')
    .map((s) => `${s.name}: ${s.detail}`)
    .join('; ');
  return `No eligible agent for this lead (${why}); it stays unassigned`;
}
