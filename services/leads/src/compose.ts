import { serviceLogger } from '@estate/platform/logging';
import { OutboxRelay, type Bus, type UnitOfWork } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Agent } from '@estate/contracts/leads';
import type { Logger } from 'pino';
import { ActivitiesService } from './activities.service';
import type { ListingLookup } from './clients/listings.client';
import { AgentsService, SLOT_GRACE_MS } from './agents.service';
import { ActivityRecordSubscriber } from './events/activity-record.subscriber';
import { ListingProjectionSubscriber } from './events/listing-projection.subscriber';
import { TimelineSubscriber } from './events/timeline.subscriber';
import { LeadWriter } from './lead-writer.service';
import { LeadsService } from './leads.service';
import { ListingSummariesService } from './listing-summaries.service';
import { ActivityRepository } from './repositories/activity.repository';
import { AGENTS_COLLECTION, AgentRepository } from './repositories/agent.repository';
import { LEADS_COLLECTION, LeadRepository } from './repositories/lead.repository';
import { ListingSummaryRepository } from './repositories/listing-summary.repository';
import { RoutingRepository } from './repositories/routing.repository';
import { ScoringConfigRepository } from './repositories/scoring-config.repository';
import { RoutingRulesService } from './routing-rules.service';
import { RoutingService } from './routing.service';
import { ScoringService } from './scoring.service';

export interface LeadsRuntime {
  leads: LeadsService;
  activities: ActivitiesService;
  agents: AgentsService;
  routing: RoutingService;
  routingRules: RoutingRulesService;
  scoring: ScoringService;
  relay: OutboxRelay;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Wires the leads service over whichever adapters the profile chose. Its bus subscriptions are
 * made here, before any runtime of the process starts, so that nothing published at start-up
 * (a listing's pending outbox, say) goes by before the leads service listens.
 */
export async function composeLeads(deps: {
  store: DocumentStore;
  bus: Bus;
  log: Logger;
  /** The listings service (over HTTP when distributed, a direct call when embedded). */
  listings: ListingLookup;
  clock?: () => Date;
  /** How a write and its events commit, chosen by the profile (docs/decisions/0126-unit-of-work.md). */
  units: UnitOfWork;
  /** Whether the store serves `q` from a multikey index on the leads' search tokens (MongoDB; SQLite indexes no array members). */
  searchTokenIndex: boolean;
}): Promise<LeadsRuntime> {
  const log = serviceLogger(deps.log, 'leads');
  const clock = deps.clock ?? (() => new Date());
  const [leadRepo, activityRepo, agentRepo, summaries, routingRepo, configs] = await Promise.all([
    LeadRepository.open(deps.store, { searchTokenIndex: deps.searchTokenIndex }),
    ActivityRepository.open(deps.store),
    AgentRepository.open(deps.store),
    ListingSummaryRepository.open(deps.store),
    RoutingRepository.open(deps.store),
    ScoringConfigRepository.open(deps.store),
  ]);
  const relay = new OutboxRelay({ bus: deps.bus, log, units: deps.units });
  relay.watch(LEADS_COLLECTION, leadRepo.collection);
  relay.watch(AGENTS_COLLECTION, agentRepo.collection);

  const writer = new LeadWriter({
    leads: leadRepo,
    activities: activityRepo,
    agents: agentRepo,
    listings: summaries,
    configs,
    units: deps.units,
    clock,
    log,
  });
  const routing = new RoutingService({
    writer,
    leads: leadRepo,
    agents: agentRepo,
    routing: routingRepo,
    listings: summaries,
    clock,
    log,
  });
  const routingRules = new RoutingRulesService({ agents: agentRepo, routing: routingRepo, clock, log });
  const leads = new LeadsService({
    writer,
    leads: leadRepo,
    agents: agentRepo,
    listings: summaries,
    listingSummaries: new ListingSummariesService({ summaries, listings: deps.listings, log }),
    routing,
    clock,
    log,
  });
  const activities = new ActivitiesService({ writer, leads: leadRepo, activities: activityRepo, clock, log });
  const agents = new AgentsService({
    agents: agentRepo,
    leads: leadRepo,
    routing: routingRepo,
    writer,
    outbox: relay,
    clock,
    log,
  });
  const scoring = new ScoringService({ configs, leads: leadRepo, writer, clock, log });

  const subscribers = [
    new ListingProjectionSubscriber({ bus: deps.bus, summaries, units: deps.units, log }),
    new ActivityRecordSubscriber({ bus: deps.bus, activities, log }),
    new TimelineSubscriber({ bus: deps.bus, activities }),
  ];
  // Started here, not in start(): see above.
  for (const subscriber of subscribers) await subscriber.start();

  let audit: NodeJS.Timeout | undefined;
  const auditSlots = () =>
    agents.auditSlots().catch((err: unknown) => log.warn({ err }, 'capacity slot audit failed; will retry'));

  return {
    leads,
    activities,
    agents,
    routing,
    routingRules,
    scoring,
    relay,
    async start() {
      relay.start();
      scoring.start();
      void auditSlots();
      audit = setInterval(() => void auditSlots(), SLOT_GRACE_MS);
      audit.unref();
    },
    async stop() {
      if (audit) clearInterval(audit);
      await Promise.all(subscribers.map((s) => s.stop()));
      await scoring.stop();
      await relay.stop();
    },
  };
}

/** An agent of the account read straight from the leads store, or null (the CLI checks agent keys offline). */
export async function readAgent(store: DocumentStore, accountId: string, agentId: string): Promise<Agent | null> {
  return (await AgentRepository.open(store)).get(accountId, agentId);
}
