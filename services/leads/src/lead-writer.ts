import { createHash, randomBytes } from 'node:crypto';
import { engagementActivityTypes, type Activity, type ActivityActor, type ActivityType, type Assignment, type ScoreBreakdown } from '@estate/contracts/leads';
import { outboxEntry, type OutboxEntry, type OutboxRelay } from '@estate/bus';
import { AppError, notFound } from '@estate/platform/errors';
import type { Logger } from 'pino';
import { activitySummaryOf, leadEventView, newestFirst, RECENT_ACTIVITIES } from './lead.views';
import { isOpen } from './pipeline';
import type { ActivityRepository } from './repositories/activity.repository';
import type { AgentRepository } from './repositories/agent.repository';
import { LEADS_COLLECTION, type LeadRecord, type LeadRepository, type StoredLead } from './repositories/lead.repository';
import type { ListingSummaryRepository } from './repositories/listing-summary.repository';
import type { ScoringConfigRepository } from './repositories/scoring-config.repository';
import { defaultScoringConfig, scoreLead, type EngagementType } from './scoring';

export const newLeadId = () => `lead_${randomBytes(12).toString('base64url')}`;
let lastIdMs = 0;
let idSeq = 0;
/**
 * Activity ids sort in the order they were made (wall clock, then a counter, then randomness), so
 * activities at the same `occurredAt` keep their recording order on the timeline (ties go by id).
 */
export function newActivityId(): string {
  const ms = Date.now();
  idSeq = ms === lastIdMs ? idSeq + 1 : 0;
  lastIdMs = ms;
  return `act_${ms.toString(36).padStart(9, '0')}${idSeq.toString(36).padStart(4, '0')}${randomBytes(6).toString('base64url')}`;
}
/** The activity id of a bus command: the same event id always names the same activity. */
export const activityIdForEvent = (accountId: string, eventId: string) => `act_${createHash('sha256').update(`${accountId}\n${eventId}`).digest('base64url').slice(0, 22)}`;

/** Compare-and-set attempts before a change gives up on a lead that keeps changing. */
const MAX_ATTEMPTS = 16;
/** Writers that lost a race on one lead wait a little, at random, so they do not collide again at once. */
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 ** attempt)));
/** Activity ids a lead remembers, so a redelivered command is recognised before its activity reaches the timeline. */
const APPLIED_IDS_KEPT = 100;
const ENGAGEMENT: ReadonlySet<string> = new Set(engagementActivityTypes);
/** Fields whose change publishes `leads.lead.updated`. */
const PUBLISHED_FIELDS = ['name', 'email', 'phone', 'source', 'status', 'tags', 'propertyInterests'] as const;

export interface ChangeContext {
  accountId: string;
  actor: ActivityActor;
  requestId?: string;
}

/** An activity a change brings, before the writer gives it its id, time and actor. */
export interface NewActivity {
  id?: string;
  type: ActivityType;
  customType?: string;
  occurredAt?: string;
  summary?: string;
  data?: Record<string, unknown>;
  listingId?: string;
  actor?: ActivityActor;
}

export type LeadFields = Pick<LeadRecord, 'name' | 'email' | 'phone' | 'source' | 'status' | 'agentId' | 'tags' | 'propertyInterests' | 'score' | 'scoreSource'>;

/** What a caller wants to change; the writer derives the rest (system activities, aggregates, score, events, capacity). */
export interface Change {
  fields?: Partial<LeadFields>;
  /** With a change of agent: how it came about. */
  assignment?: Assignment | null;
  activities?: NewActivity[];
  /** A capacity slot the caller already took on the new agent (routing); otherwise the writer holds one when needed. */
  slot?: { agentId: string; token: string };
}

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
  outbox: Pick<OutboxRelay, 'kick' | 'relayNow'>;
  clock: () => Date;
  log: Logger;
}

type Draft = Pick<LeadRecord, 'name' | 'email' | 'phone' | 'source' | 'tags' | 'propertyInterests'>;

/**
 * Every write of a lead goes through here: one single-document compare-and-set carrying the
 * lead's new state, the activities it gained (kept in `recentActivities` and as
 * `leads.activity.recorded` events in its outbox) and its other events. Nothing is ever half
 * written: the timeline collection and the agents' capacity follow from that one write
 * (docs/decisions/0040-leads-aggregate-and-outbox.md).
 */
export class LeadWriter {
  constructor(private readonly deps: LeadWriterDeps) {}

  /** Inserts a new lead with its first activities; throws DuplicateKeyError when its email or phone is taken. */
  async create(ctx: ChangeContext, draft: Draft, activities: NewActivity[]): Promise<LeadRecord> {
    const now = this.deps.clock().toISOString();
    const id = newLeadId();
    const recorded = activities.map((a) => this.activityOf(ctx, id, a, now));
    const unscored = withActivities(
      { id, accountId: ctx.accountId, ...draft, status: 'new' as const, activityCounts: {}, lastActivityByType: {}, recentActivities: [], appliedActivityIds: [], createdAt: now, updatedAt: now, lastActivityAt: now, version: 1 },
      recorded,
    );
    const breakdown = await this.scoreOf(unscored);
    const lead: LeadRecord = { ...unscored, score: breakdown.engineScore, scoreSource: 'engine', scoreBreakdown: breakdown };
    const events = [
      outboxEntry('leads.lead.created', { accountId: ctx.accountId, leadId: id, version: 1, occurredAt: now, lead: leadEventView(lead), changes: [] }, ctx.requestId),
      ...recorded.map((a) => this.recordedEvent(ctx, lead, a)),
    ];
    await this.deps.leads.insert(lead, events);
    await this.afterWrite(ctx, id, recorded, undefined);
    return lead;
  }

  /**
   * Applies `decide(current)` to a lead with compare-and-set, re-deciding on a fresh read when
   * another writer got there first. `decide` may throw (refusals) or return null (nothing to do).
   * With `ifMatch`, a lead at another version is 412 instead of a retry.
   */
  async change(ctx: ChangeContext, leadId: string, decide: (lead: LeadRecord) => Change | null | Promise<Change | null>, options: { ifMatch?: number } = {}): Promise<Changed> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = await this.deps.leads.get(ctx.accountId, leadId);
      if (!stored) throw notFound('lead_not_found', 'Lead', leadId);
      const current = stored.lead;
      if (options.ifMatch !== undefined && options.ifMatch !== current.version) {
        throw new AppError('version_mismatch', `The lead is at version ${current.version}, not ${options.ifMatch}`, { fields: { currentVersion: current.version } });
      }
      const change = await decide(current);
      if (!change) return { lead: current, written: false, activities: [] };
      const outcome = await this.tryWrite(ctx, stored, change);
      if (outcome) return outcome;
      if (options.ifMatch !== undefined) throw new AppError('version_mismatch', 'The lead changed while this change was applied');
      await backoff(attempt);
    }
    throw new AppError('conflict', 'The lead is changing too often to apply this change; retry');
  }

  private async tryWrite(ctx: ChangeContext, stored: StoredLead, change: Change): Promise<Changed | null> {
    const current = stored.lead;
    const now = this.deps.clock().toISOString();
    let next: LeadRecord = { ...current, ...change.fields };
    const agentChanged = (next.agentId ?? null) !== (current.agentId ?? null);
    if (agentChanged) next.assignment = next.agentId ? (change.assignment ?? undefined) : undefined;
    const activities = [...(change.activities ?? []).map((a) => this.activityOf(ctx, current.id, a, now)), ...this.consequences(ctx, current, next, now)];
    next = withActivities(next, activities);

    const breakdown = await this.scoreOf(next);
    next.scoreBreakdown = breakdown;
    if (next.scoreSource === 'engine') next.score = breakdown.engineScore;
    const scoreChanged = next.score !== current.score;
    if (scoreChanged) {
      const scoreChange = this.activityOf(ctx, current.id, {
        type: 'score_change',
        summary: `Score ${current.score} → ${next.score} (${next.scoreSource})`,
        data: { from: current.score, to: next.score, scoreSource: next.scoreSource },
        actor: { type: 'system', id: null, agentId: null },
      }, now);
      activities.push(scoreChange);
      next = withActivities(next, [scoreChange]);
    }
    const published = PUBLISHED_FIELDS.filter((f) => JSON.stringify(next[f] ?? null) !== JSON.stringify(current[f] ?? null));
    const explained = pointsOf(breakdown) !== pointsOf(current.scoreBreakdown);
    if (published.length === 0 && !agentChanged && !scoreChanged && !explained && activities.length === 0 && next.scoreSource === current.scoreSource) {
      return { lead: current, written: false, activities: [] };
    }

    const slots = await this.slotsFor(ctx, current, next, change);
    next = { ...next, slot: slots.kept, updatedAt: now, version: current.version + 1 };
    const events = [
      ...(published.length > 0 ? [outboxEntry('leads.lead.updated', { ...eventBase(next, now), lead: leadEventView(next), changes: [...published] }, ctx.requestId)] : []),
      ...(agentChanged ? [outboxEntry('leads.lead.assigned', { ...eventBase(next, now), agentId: next.agentId ?? null, previousAgentId: current.agentId ?? null, assignment: next.assignment ?? null }, ctx.requestId)] : []),
      ...(scoreChanged ? [outboxEntry('leads.lead.scored', { ...eventBase(next, now), score: next.score, previousScore: current.score, scoreSource: next.scoreSource }, ctx.requestId)] : []),
      ...activities.map((a) => this.recordedEvent(ctx, next, a)),
    ];

    let written: LeadRecord | null;
    try {
      written = await this.deps.leads.replace(stored, next, events);
    } catch (err) {
      if (slots.heldHere) await this.release(slots.heldHere.agentId, slots.heldHere.token);
      throw err;
    }
    if (!written) {
      if (slots.heldHere) await this.release(slots.heldHere.agentId, slots.heldHere.token);
      return null;
    }
    await this.afterWrite(ctx, current.id, activities, slots.released);
    return { lead: written, written: true, activities };
  }

  /** The activities the system records for a change: a status change, an assignment. */
  private consequences(ctx: ChangeContext, current: LeadRecord, next: LeadRecord, now: string): Activity[] {
    const out: Activity[] = [];
    if (next.status !== current.status) {
      out.push(this.activityOf(ctx, current.id, { type: 'status_change', summary: `${current.status} → ${next.status}`, data: { from: current.status, to: next.status } }, now));
    }
    if ((next.agentId ?? null) !== (current.agentId ?? null)) {
      out.push(this.activityOf(ctx, current.id, {
        type: 'assignment',
        summary: next.agentId ? `Assigned to ${next.agentId}` : `Unassigned from ${current.agentId}`,
        data: {
          from: current.agentId ?? null,
          to: next.agentId ?? null,
          ruleId: next.assignment?.ruleId ?? null,
          strategy: next.assignment?.strategy ?? null,
          reason: next.assignment?.reason ?? null,
        },
      }, now));
    }
    return out;
  }

  /**
   * Capacity: an open, assigned lead holds one slot on its agent. Which slot the lead keeps after
   * the change, the one taken here (given back if the write fails) and the one to give back after it.
   */
  private async slotsFor(ctx: ChangeContext, current: LeadRecord, next: LeadRecord, change: Change): Promise<{ kept: LeadRecord['slot']; heldHere?: LeadRecord['slot']; released?: LeadRecord['slot'] }> {
    const wanted = isOpen(next.status) && next.agentId ? next.agentId : undefined;
    if (current.slot?.agentId === wanted) return { kept: current.slot };
    if (!wanted) return { kept: undefined, released: current.slot };
    if (change.slot?.agentId === wanted) return { kept: change.slot, released: current.slot };
    const token = await this.deps.agents.hold(ctx.accountId, wanted, this.deps.clock());
    // An agent that no longer exists holds nothing; the lead keeps its agent id as history.
    const held = token ? { agentId: wanted, token } : undefined;
    return { kept: held, heldHere: held, released: current.slot };
  }

  /**
   * After the write: the old slot goes back, the timeline entries land right away (read-your-writes;
   * if that fails, the event brings them), and the events go out from this request, so a busy
   * service never builds a backlog of unpublished events (the relay's sweep covers a crash).
   */
  private async afterWrite(ctx: ChangeContext, leadId: string, activities: Activity[], oldSlot: LeadRecord['slot']): Promise<void> {
    if (oldSlot) await this.release(oldSlot.agentId, oldSlot.token);
    try {
      for (const a of activities) await this.deps.activities.insertIfAbsent(ctx.accountId, a);
    } catch (err) {
      this.deps.log.warn({ err, requestId: ctx.requestId }, 'timeline write-through failed; the activity event will bring it');
    }
    try {
      await this.deps.outbox.relayNow(LEADS_COLLECTION, leadId);
    } catch (err) {
      this.deps.log.warn({ err, requestId: ctx.requestId }, 'publishing the lead\'s events failed; the relay will retry');
      this.deps.outbox.kick();
    }
  }

  async release(agentId: string, token: string): Promise<void> {
    try {
      await this.deps.agents.release(agentId, token);
    } catch (err) {
      // A slot not given back only makes the agent look busier; the slot audit returns it.
      this.deps.log.warn({ err, agentId }, 'could not release a capacity slot; the slot audit will');
    }
  }

  /** The engine's breakdown for the lead as it now is. */
  async scoreOf(lead: Scored): Promise<ScoreBreakdown> {
    const [config, listings] = await Promise.all([
      this.deps.configs.get(lead.accountId),
      this.deps.listings.resolve(lead.accountId, lead.propertyInterests.map((i) => i.listingId)),
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

  private activityOf(ctx: ChangeContext, leadId: string, a: NewActivity, now: string): Activity {
    return {
      id: a.id ?? newActivityId(),
      leadId,
      type: a.type,
      customType: a.customType ?? null,
      occurredAt: a.occurredAt ?? now,
      summary: a.summary ?? null,
      data: a.data ?? null,
      listingId: a.listingId ?? null,
      actor: a.actor ?? ctx.actor,
      recordedAt: now,
    };
  }

  private recordedEvent(ctx: ChangeContext, lead: LeadRecord, activity: Activity): OutboxEntry {
    return outboxEntry(
      'leads.activity.recorded',
      { accountId: ctx.accountId, leadId: lead.id, leadVersion: lead.version, activityId: activity.id, version: 1, occurredAt: activity.recordedAt, activity },
      ctx.requestId,
    );
  }
}

type Aggregates = Pick<LeadRecord, 'activityCounts' | 'lastActivityByType' | 'lastActivityAt' | 'recentActivities' | 'appliedActivityIds'>;
/** What the engine reads of a lead. */
type Scored = Pick<LeadRecord, 'accountId' | 'email' | 'phone' | 'source' | 'activityCounts' | 'lastActivityByType' | 'createdAt' | 'propertyInterests'>;

const eventBase = (lead: LeadRecord, now: string) => ({ accountId: lead.accountId, leadId: lead.id, version: lead.version, occurredAt: now });

/** Weights and points: what a breakdown says, leaving out the wording and how old the recency reading is. */
const pointsOf = (b: ScoreBreakdown | undefined) => JSON.stringify(b ? Object.values(b.components).map((c) => [c.weight, c.points]) : null);

/** The lead's timeline aggregates after these activities. */
function withActivities<T extends Aggregates>(lead: T, activities: Activity[]): T {
  if (activities.length === 0) return lead;
  const counts = { ...lead.activityCounts };
  const lastByType = { ...lead.lastActivityByType };
  let lastActivityAt = lead.lastActivityAt;
  for (const a of activities) {
    if (ENGAGEMENT.has(a.type)) {
      const type = a.type as EngagementType;
      counts[type] = (counts[type] ?? 0) + 1;
      if (!lastByType[type] || lastByType[type]! < a.occurredAt) lastByType[type] = a.occurredAt;
    }
    // A score change is the system's consequence of other activity, not activity on the lead.
    if (a.type !== 'score_change' && a.occurredAt > lastActivityAt) lastActivityAt = a.occurredAt;
  }
  return {
    ...lead,
    activityCounts: counts,
    lastActivityByType: lastByType,
    lastActivityAt,
    recentActivities: [...lead.recentActivities, ...activities.map(activitySummaryOf)].sort(newestFirst).slice(0, RECENT_ACTIVITIES),
    appliedActivityIds: [...lead.appliedActivityIds, ...activities.map((a) => a.id)].slice(-APPLIED_IDS_KEPT),
  };
}
