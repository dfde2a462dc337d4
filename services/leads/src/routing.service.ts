import type { Identity } from '@estate/contracts/accounts';
import type { RoutingDecision, RoutingPreviewBody, RoutingStrategy } from '@estate/contracts/leads';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import type { Logger } from 'pino';
import { slugify } from './contact.rules';
import { originOf, TEAM_ADMINS } from './lead-access.rules';
import type { ChangeOrigin } from './lead.rules';
import type { LeadWriter } from './lead-writer.service';
import { isOpen } from './pipeline.rules';
import type { AgentRepository } from './repositories/agent.repository';
import type { LeadRecord, LeadRepository } from './repositories/lead.repository';
import type { ListingSummaryRepository } from './repositories/listing-summary.repository';
import type { RoutingRepository } from './repositories/routing.repository';
import {
  choiceReason,
  ineligibility,
  noAgentReason,
  nobodyEligible,
  offerOrder,
  routingPlan,
  toRoutingAgent,
  usesTicket,
  type LeadFacts,
  type RoutingAgent,
  type RoutingStep,
  type StepReport,
} from './routing.rules';

export interface RoutingDeps {
  writer: LeadWriter;
  leads: LeadRepository;
  agents: AgentRepository;
  routing: RoutingRepository;
  listings: ListingSummaryRepository;
  clock: () => Date;
  log: Logger;
}

/** Rounds of least-loaded choice while concurrent routings change the loads (each round, one of them wins). */
const LEAST_LOADED_ROUNDS = 25;

/** What routing decided: an agent (and, when routing for real, the capacity slot taken on it), or nobody and why. */
type Decision =
  | {
      chosen: true;
      agentId: string;
      ruleId: string | null;
      strategy: RoutingStrategy;
      reason: string;
      token?: string;
      steps: StepReport[];
    }
  | { chosen: false; reason: string; steps: StepReport[] };

type StepResult = { agent: RoutingAgent; turn: number; token?: string } | { detail: string };

/** The routing engine: routes a lead to an agent by the account's rules and team default, or previews who would get it. */
export class RoutingService {
  constructor(private readonly deps: RoutingDeps) {}

  /** `POST /v1/leads/:id/route`: an admin asks for the lead to be (re)routed. */
  async route(ctx: RequestContext, leadId: string): Promise<LeadRecord> {
    assertRole(ctx.who, TEAM_ADMINS, 'route leads');
    return this.routeLead(originOf(ctx), leadId);
  }

  /** Routes a lead: the first matching rule with an eligible agent, else the team default; 409 when nobody can take it. */
  async routeLead(origin: ChangeOrigin, leadId: string): Promise<LeadRecord> {
    const stored = await this.deps.leads.get(origin.accountId, leadId);
    if (!stored) throw notFound('lead_not_found', 'Lead', leadId);
    assertOpen(stored.lead);
    const decision = await this.decide(origin.accountId, await this.factsOf(stored.lead), true);
    if (!decision.chosen)
      throw new AppError('no_agent_available', decision.reason, { fields: { steps: decision.steps } });
    const token = decision.token!;
    let routed: LeadRecord | undefined;
    try {
      const assignedAt = this.deps.clock().toISOString();
      routed = (
        await this.deps.writer.change(
          origin,
          leadId,
          (cur) => {
            assertOpen(cur);
            return {
              fields: { agentId: decision.agentId },
              assignment: { ruleId: decision.ruleId, strategy: decision.strategy, reason: decision.reason, assignedAt },
              slot: { agentId: decision.agentId, token },
            };
          },
          { read: stored },
        )
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
    if ('leadId' in body) {
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
    const d = await this.decide(who.accountId, facts, false);
    return d.chosen
      ? { agentId: d.agentId, ruleId: d.ruleId, strategy: d.strategy, reason: d.reason, steps: d.steps }
      : { agentId: null, ruleId: null, strategy: null, reason: d.reason, steps: d.steps };
  }

  private async factsOf(lead: LeadRecord): Promise<LeadFacts> {
    return this.facts(lead.accountId, lead.source, lead.score, lead.propertyInterests[0]?.listingId);
  }

  private async facts(
    accountId: string,
    source: string,
    score: number,
    firstListingId: string | undefined,
  ): Promise<LeadFacts> {
    const listing = firstListingId
      ? (await this.deps.listings.resolve(accountId, [firstListingId])).get(firstListingId)
      : undefined;
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
    const { plan, skipped } = routingPlan(accountId, {
      rules,
      agents: agents.map(toRoutingAgent),
      settings,
      facts,
      slug: slugify,
    });
    const steps = [...skipped];
    for (const step of plan) {
      const chosen = await this.tryStep(accountId, step, reserve);
      if ('detail' in chosen) {
        steps.push({ ruleId: step.ruleId, name: step.name, outcome: 'no_eligible_agent', detail: chosen.detail });
        continue;
      }
      const reason = choiceReason(step, chosen.agent, chosen.turn);
      steps.push({ ruleId: step.ruleId, name: step.name, outcome: 'chosen', detail: reason });
      return {
        chosen: true,
        agentId: chosen.agent.id,
        ruleId: step.ruleId,
        strategy: step.strategy,
        reason,
        token: chosen.token,
        steps,
      };
    }
    return { chosen: false, reason: noAgentReason(steps), steps };
  }

  private async tryStep(accountId: string, step: RoutingStep, reserve: boolean): Promise<StepResult> {
    const nobody = (candidates: RoutingAgent[]) => ({ detail: nobodyEligible(candidates) });
    if (!step.candidates.some((a) => !ineligibility(a))) return nobody(step.candidates);
    const turn = usesTicket(step.strategy)
      ? await (reserve ? this.deps.routing.nextTurn(step.turnKey) : this.deps.routing.peekTurn(step.turnKey))
      : 0;
    const now = this.deps.clock();

    if (step.strategy === 'least_loaded' && reserve) {
      // Take a slot only if the agent still has the load we chose it by; otherwise look again.
      let candidates = step.candidates;
      for (let round = 0; round < LEAST_LOADED_ROUNDS; round++) {
        const agent = offerOrder('least_loaded', candidates, turn, null).find((a) => !ineligibility(a));
        if (!agent) return nobody(candidates);
        const token = await this.deps.agents.reserve(accountId, agent.id, now, agent.openLeads);
        if (token) return { agent, turn, token };
        candidates = await this.freshen(accountId, candidates);
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
    const current = await this.freshen(accountId, step.candidates);
    return current.some((a) => !ineligibility(a))
      ? { detail: 'every eligible agent filled up while routing' }
      : nobody(current);
  }

  /** The candidates as they stand now (loads move under concurrent routing; deleted agents drop out). */
  private async freshen(accountId: string, candidates: readonly RoutingAgent[]): Promise<RoutingAgent[]> {
    const fresh = new Map((await this.deps.agents.allOf(accountId)).map((a) => [a.id, toRoutingAgent(a)]));
    return candidates.map((c) => fresh.get(c.id)).filter((a): a is RoutingAgent => a !== undefined);
  }
}

function assertOpen(lead: LeadRecord): void {
  if (!isOpen(lead.status))
    throw new AppError('conflict', `The lead is ${lead.status}; only leads in an open stage are routed`);
}
