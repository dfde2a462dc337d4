import type { UnitOfWork } from '@estate/bus';
import type { Activity, ScoreBreakdown } from '@estate/contracts/leads';
import { notFound } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { updateVersioned } from '@estate/store';
import type { Logger } from 'pino';
import {
  activityOf,
  applyChange,
  changeEvents,
  createdEvents,
  newLead,
  settleChange,
  slotPlan,
  type Change,
  type ChangeOrigin,
  type LeadDraft,
  type NewActivity,
  type Slot,
  type SlotPlan,
  type Stamp,
} from './lead.rules';
import type { ActivityRepository } from './repositories/activity.repository';
import type { AgentRepository } from './repositories/agent.repository';
import type { LeadRecord, LeadRepository, StoredLead } from './repositories/lead.repository';
import type { KnownListings, ListingSummaryRepository } from './repositories/listing-summary.repository';
import type { ScoringConfigRepository } from './repositories/scoring-config.repository';
import { defaultScoringConfig, scoreLead } from './scoring.rules';

/** Compare-and-set attempts before a change gives up on a lead that keeps changing (a hot lead sees many writers). */
const CHANGE_ATTEMPTS = 16;

export interface Changed {
  lead: LeadRecord;
  /** False when the change turned out to change nothing (nothing was written). */
  written: boolean;
  /** The activities recorded, system ones included. */
  activities: Activity[];
}

export interface LeadWriterDeps {
  leads: LeadRepository;
  activities: ActivityRepository;
  agents: AgentRepository;
  listings: ListingSummaryRepository;
  configs: ScoringConfigRepository;
  /** How the lead, its events and its timeline entries are written (docs/decisions/0126-unit-of-work.md). */
  units: UnitOfWork;
  clock: () => Date;
  log: Logger;
}

/** What the engine reads of a lead. */
type Scored = Pick<
  LeadRecord,
  | 'accountId'
  | 'email'
  | 'phone'
  | 'source'
  | 'activityCounts'
  | 'lastActivityByType'
  | 'createdAt'
  | 'propertyInterests'
>;

/**
 * Every write of a lead goes through here: one single-document compare-and-set carrying the
 * lead's new state, the activities it gained (kept in `recentActivities` and as
 * `leads.activity.recorded` events in its outbox) and its other events. Nothing is ever half
 * written: the timeline collection and the agents' capacity follow from that one write
 * (docs/decisions/0040-leads-aggregate-and-outbox.md). What a change does is decided in lead.rules.ts.
 */
export class LeadWriter {
  constructor(private readonly deps: LeadWriterDeps) {}

  /**
   * Inserts a new lead with its first activities; throws DuplicateKeyError when its email or phone is taken. `known`:
   * listing summaries the caller has just read (scored from them without a read).
   */
  async create(
    origin: ChangeOrigin,
    draft: LeadDraft,
    activities: NewActivity[],
    known?: KnownListings,
  ): Promise<LeadRecord> {
    const stamp = this.stamp(origin, newId('lead'));
    const recorded = activities.map((a) => activityOf(stamp, a));
    const unscored = newLead(stamp, draft, recorded);
    const breakdown = await this.scoreOf(unscored, known);
    const lead: LeadRecord = {
      ...unscored,
      score: breakdown.engineScore,
      scoreSource: 'engine',
      scoreBreakdown: breakdown,
    };
    const events = createdEvents(origin, lead, recorded, stamp.now);
    await this.deps.units.run(async (unit) => {
      await this.deps.leads.insert(unit, lead, events);
      await unit.project(() => this.writeTimeline(origin, recorded), { readYourWrites: true });
    });
    return lead;
  }

  /**
   * Applies `decide(current)` to a lead with compare-and-set, re-deciding on a fresh read when
   * another writer got there first. `decide` may throw (refusals) or return null (nothing to do).
   * With `ifMatch`, a lead at another version is 412 instead of a retry. With `read`, the first attempt starts
   * from the lead the caller has just read.
   */
  async change(
    origin: ChangeOrigin,
    leadId: string,
    decide: (lead: LeadRecord) => Change | null | Promise<Change | null>,
    options: { ifMatch?: number; read?: StoredLead; known?: KnownListings } = {},
  ): Promise<Changed> {
    return updateVersioned<StoredLead, Changed>({
      what: 'lead',
      ifMatch: options.ifMatch,
      first: options.read,
      attempts: CHANGE_ATTEMPTS,
      versionOf: (stored) => stored.lead.version,
      read: async () => {
        const stored = await this.deps.leads.get(origin.accountId, leadId);
        if (!stored) throw notFound('lead_not_found', 'Lead', leadId);
        return stored;
      },
      write: async (stored) => {
        const change = await decide(stored.lead);
        return change
          ? this.tryWrite(origin, stored, change, options.known)
          : { lead: stored.lead, written: false, activities: [] };
      },
    });
  }

  /** The write of one attempt: null when another writer changed the lead since it was read. */
  private async tryWrite(
    origin: ChangeOrigin,
    stored: StoredLead,
    change: Change,
    known?: KnownListings,
  ): Promise<Changed | null> {
    const current = stored.lead;
    const stamp = this.stamp(origin, current.id);
    const applied = applyChange(current, change, stamp);
    const outcome = settleChange(current, applied, await this.scoreOf(applied.next, known), stamp);
    if (!outcome) return { lead: current, written: false, activities: [] };

    const slots = await this.slotsFor(origin, slotPlan(current, outcome.next, change.slot));
    const next: LeadRecord = { ...outcome.next, slot: slots.kept, updatedAt: stamp.now, version: current.version + 1 };
    const events = changeEvents(origin, current, { ...outcome, next }, stamp.now);

    let written: LeadRecord | null;
    try {
      // The events go out from this request once the unit commits: a busy service builds no backlog of them.
      written = await this.deps.units.run(async (unit) => {
        const saved = await this.deps.leads.replace(unit, stored, next, events);
        if (saved) await unit.project(() => this.writeTimeline(origin, outcome.activities), { readYourWrites: true });
        return saved;
      });
    } catch (err) {
      if (slots.heldHere) await this.release(slots.heldHere.agentId, slots.heldHere.token);
      throw err;
    }
    if (!written) {
      if (slots.heldHere) await this.release(slots.heldHere.agentId, slots.heldHere.token);
      return null;
    }
    if (slots.released) await this.release(slots.released.agentId, slots.released.token);
    return { lead: written, written: true, activities: outcome.activities };
  }

  private stamp(origin: ChangeOrigin, leadId: string): Stamp {
    // Activity ids sort in the order they were made, so activities at the same `occurredAt` keep their recording order.
    return { origin, leadId, now: this.deps.clock().toISOString(), newId: () => newId('act') };
  }

  /** Carries out a slot plan: the slot the lead keeps, the one taken here (given back if the write fails) and the one to give back after it. */
  private async slotsFor(
    origin: ChangeOrigin,
    plan: SlotPlan,
  ): Promise<{ kept: Slot | undefined; heldHere?: Slot; released?: Slot }> {
    if (!('holdOn' in plan)) return { kept: plan.kept, released: plan.release };
    const token = await this.deps.agents.hold(origin.accountId, plan.holdOn, this.deps.clock());
    // An agent that no longer exists holds nothing; the lead keeps its agent id as history.
    const held = token ? { agentId: plan.holdOn, token } : undefined;
    return { kept: held, heldHere: held, released: plan.release };
  }

  private async writeTimeline(origin: ChangeOrigin, activities: Activity[]): Promise<void> {
    for (const a of activities) await this.deps.activities.insertIfAbsent(origin.accountId, a);
  }

  async release(agentId: string, token: string): Promise<void> {
    try {
      await this.deps.agents.release(agentId, token);
    } catch (err) {
      // A slot not given back only makes the agent look busier; the slot audit returns it.
      this.deps.log.warn({ err, agentId }, 'could not release a capacity slot; the slot audit will');
    }
  }

  /** The engine's breakdown for the lead as it now is (listings in `known` are not read again). */
  async scoreOf(lead: Scored, known?: KnownListings): Promise<ScoreBreakdown> {
    const [config, listings] = await Promise.all([
      this.deps.configs.get(lead.accountId),
      this.deps.listings.resolve(
        lead.accountId,
        lead.propertyInterests.map((i) => i.listingId),
        known,
      ),
    ]);
    return scoreLead(
      {
        hasEmail: !!lead.email,
        hasPhone: !!lead.phone,
        source: lead.source,
        activityCounts: lead.activityCounts,
        lastActivityByType: lead.lastActivityByType,
        createdAt: lead.createdAt,
        interests: lead.propertyInterests.map((i) => listings.get(i.listingId)?.status ?? null),
      },
      config?.settings ?? defaultScoringConfig,
      this.deps.clock(),
    );
  }
}
