import { createHash } from 'node:crypto';
import { outboxEntry, type OutboxEntry } from '@estate/bus';
import {
  engagementActivityTypes,
  type Activity,
  type ActivityActor,
  type ActivityType,
  type Assignment,
  type ScoreBreakdown,
} from '@estate/contracts/leads';
import { activitySummaryOf, leadEventView, newestFirst, RECENT_ACTIVITIES } from './lead-views.rules';
import { isOpen } from './pipeline.rules';
import type { LeadRecord } from './repositories/lead.repository';
import type { EngagementType } from './scoring.rules';

/**
 * Where a lead change comes from: the account, the actor its activities are attributed to, the request id.
 * Not a RequestContext: bus commands and rescorings change leads with no caller, yet every activity names its actor.
 */
export interface ChangeOrigin {
  accountId: string;
  actor: ActivityActor;
  requestId?: string;
}

/** An activity a change brings, before it is given its id, time and actor. */
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

export type LeadFields = Pick<
  LeadRecord,
  'name' | 'email' | 'phone' | 'source' | 'status' | 'agentId' | 'tags' | 'propertyInterests' | 'score' | 'scoreSource'
>;
export type LeadDraft = Pick<LeadRecord, 'name' | 'email' | 'phone' | 'source' | 'tags' | 'propertyInterests'>;
export type Slot = NonNullable<LeadRecord['slot']>;
/** A lead before the engine has scored it. */
export type UnscoredLead = Omit<LeadRecord, 'score' | 'scoreSource' | 'scoreBreakdown'>;

/** What a caller wants to change; the rest follows from it (system activities, aggregates, score, events, capacity). */
export interface Change {
  fields?: Partial<LeadFields>;
  /** With a change of agent: how it came about. */
  assignment?: Assignment | null;
  activities?: NewActivity[];
  /** A capacity slot the caller already took on the new agent (routing); otherwise one is held when needed. */
  slot?: Slot;
}

/** How the activities of one write are stamped: where the change comes from, the lead, the time, and fresh ids. */
export interface Stamp {
  origin: ChangeOrigin;
  leadId: string;
  now: string;
  newId: () => string;
}

/** A change worked out in full: the lead as it will be written and what the write announces. */
export interface Outcome {
  next: LeadRecord;
  activities: Activity[];
  published: PublishedField[];
  agentChanged: boolean;
  scoreChanged: boolean;
}

/** Which capacity slot a lead keeps after a change: one it has or was given, or one to hold on `holdOn`; and the one to give back. */
export type SlotPlan = { kept: Slot | undefined; release?: Slot } | { holdOn: string; release?: Slot };

/** Activity ids a lead remembers, so a redelivered command is recognised before its activity reaches the timeline. */
const APPLIED_IDS_KEPT = 100;
const ENGAGEMENT: ReadonlySet<string> = new Set(engagementActivityTypes);
/** Fields whose change publishes `leads.lead.updated`. */
const PUBLISHED_FIELDS = ['name', 'email', 'phone', 'source', 'status', 'tags', 'propertyInterests'] as const;
type PublishedField = (typeof PUBLISHED_FIELDS)[number];
const SYSTEM: ActivityActor = { type: 'system', id: null, agentId: null };

/** The activity id of a bus command: the same event id always names the same activity. */
export const activityIdForEvent = (accountId: string, eventId: string) =>
  `act_${createHash('sha256').update(`${accountId}\n${eventId}`).digest('base64url').slice(0, 22)}`;

export function activityOf(stamp: Stamp, a: NewActivity): Activity {
  return {
    id: a.id ?? stamp.newId(),
    leadId: stamp.leadId,
    type: a.type,
    customType: a.customType ?? null,
    occurredAt: a.occurredAt ?? stamp.now,
    summary: a.summary ?? null,
    data: a.data ?? null,
    listingId: a.listingId ?? null,
    actor: a.actor ?? stamp.origin.actor,
    recordedAt: stamp.now,
  };
}

type Aggregates = Pick<
  LeadRecord,
  'activityCounts' | 'lastActivityByType' | 'lastActivityAt' | 'recentActivities' | 'appliedActivityIds'
>;

/** The lead's timeline aggregates after these activities. */
export function withActivities<T extends Aggregates>(lead: T, activities: Activity[]): T {
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
    recentActivities: [...lead.recentActivities, ...activities.map(activitySummaryOf)]
      .sort(newestFirst)
      .slice(0, RECENT_ACTIVITIES),
    appliedActivityIds: [...lead.appliedActivityIds, ...activities.map((a) => a.id)].slice(-APPLIED_IDS_KEPT),
  };
}

/** A new lead (status `new`, version 1) with its first activities, not yet scored. */
export function newLead(stamp: Stamp, draft: LeadDraft, activities: Activity[]): UnscoredLead {
  const { now } = stamp;
  return withActivities(
    {
      id: stamp.leadId,
      accountId: stamp.origin.accountId,
      ...draft,
      status: 'new' as const,
      activityCounts: {},
      lastActivityByType: {},
      recentActivities: [],
      appliedActivityIds: [],
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      version: 1,
    },
    activities,
  );
}

/** The events a new lead goes out with. */
export function createdEvents(
  origin: ChangeOrigin,
  lead: LeadRecord,
  activities: Activity[],
  now: string,
): OutboxEntry[] {
  return [
    outboxEntry(
      'leads.lead.created',
      {
        accountId: origin.accountId,
        leadId: lead.id,
        version: 1,
        occurredAt: now,
        lead: leadEventView(lead),
        changes: [],
      },
      origin.requestId,
    ),
    ...activities.map((a) => recordedEvent(origin, lead, a)),
  ];
}

/** The activities the system records for a change: a status change, an assignment. */
function consequences(stamp: Stamp, current: LeadRecord, next: LeadRecord): Activity[] {
  const out: Activity[] = [];
  if (next.status !== current.status) {
    out.push(
      activityOf(stamp, {
        type: 'status_change',
        summary: `${current.status} → ${next.status}`,
        data: { from: current.status, to: next.status },
      }),
    );
  }
  if ((next.agentId ?? null) !== (current.agentId ?? null)) {
    out.push(
      activityOf(stamp, {
        type: 'assignment',
        summary: next.agentId ? `Assigned to ${next.agentId}` : `Unassigned from ${current.agentId}`,
        data: {
          from: current.agentId ?? null,
          to: next.agentId ?? null,
          ruleId: next.assignment?.ruleId ?? null,
          strategy: next.assignment?.strategy ?? null,
          reason: next.assignment?.reason ?? null,
        },
      }),
    );
  }
  return out;
}

/** The change applied to the lead, before scoring: its fields, its assignment, the activities it brings and those it entails. */
export function applyChange(
  current: LeadRecord,
  change: Change,
  stamp: Stamp,
): { next: LeadRecord; activities: Activity[] } {
  const next: LeadRecord = { ...current, ...change.fields };
  if ((next.agentId ?? null) !== (current.agentId ?? null))
    next.assignment = next.agentId ? (change.assignment ?? undefined) : undefined;
  const activities = [
    ...(change.activities ?? []).map((a) => activityOf(stamp, a)),
    ...consequences(stamp, current, next),
  ];
  return { next: withActivities(next, activities), activities };
}

/** Weights and points: what a breakdown says, leaving out the wording and how old the recency reading is. */
const pointsOf = (b: ScoreBreakdown | undefined) =>
  JSON.stringify(b ? Object.values(b.components).map((c) => [c.weight, c.points]) : null);

/**
 * The applied change with the engine's breakdown: the score (unless manual) and its `score_change`
 * activity. Null when the change turns out to change nothing worth writing.
 */
export function settleChange(
  current: LeadRecord,
  applied: { next: LeadRecord; activities: Activity[] },
  breakdown: ScoreBreakdown,
  stamp: Stamp,
): Outcome | null {
  let next: LeadRecord = { ...applied.next, scoreBreakdown: breakdown };
  const activities = [...applied.activities];
  if (next.scoreSource === 'engine') next.score = breakdown.engineScore;
  const agentChanged = (next.agentId ?? null) !== (current.agentId ?? null);
  const scoreChanged = next.score !== current.score;
  if (scoreChanged) {
    const scoreChange = activityOf(stamp, {
      type: 'score_change',
      summary: `Score ${current.score} → ${next.score} (${next.scoreSource})`,
      data: { from: current.score, to: next.score, scoreSource: next.scoreSource },
      // A manual score is set by a caller: the timeline says who (decision 0047).
      actor: next.scoreSource === 'manual' ? stamp.origin.actor : SYSTEM,
    });
    activities.push(scoreChange);
    next = withActivities(next, [scoreChange]);
  }
  const published = PUBLISHED_FIELDS.filter(
    (f) => JSON.stringify(next[f] ?? null) !== JSON.stringify(current[f] ?? null),
  );
  const explained = pointsOf(breakdown) !== pointsOf(current.scoreBreakdown);
  if (
    published.length === 0 &&
    !agentChanged &&
    !scoreChanged &&
    !explained &&
    activities.length === 0 &&
    next.scoreSource === current.scoreSource
  )
    return null;
  return { next, activities, published, agentChanged, scoreChanged };
}

/** Capacity: an open, assigned lead holds one slot on its agent. `offered` is a slot the caller already took. */
export function slotPlan(current: LeadRecord, next: LeadRecord, offered?: Slot): SlotPlan {
  const wanted = isOpen(next.status) && next.agentId ? next.agentId : undefined;
  if (current.slot?.agentId === wanted) return { kept: current.slot };
  if (!wanted) return { kept: undefined, release: current.slot };
  if (offered?.agentId === wanted) return { kept: offered, release: current.slot };
  return { holdOn: wanted, release: current.slot };
}

/** The events of a written change; `outcome.next` is the lead as written (its new version). */
export function changeEvents(origin: ChangeOrigin, current: LeadRecord, outcome: Outcome, now: string): OutboxEntry[] {
  const { next } = outcome;
  const base = { accountId: next.accountId, leadId: next.id, version: next.version, occurredAt: now };
  return [
    ...(outcome.published.length > 0
      ? [
          outboxEntry(
            'leads.lead.updated',
            { ...base, lead: leadEventView(next), changes: [...outcome.published] },
            origin.requestId,
          ),
        ]
      : []),
    ...(outcome.agentChanged
      ? [
          outboxEntry(
            'leads.lead.assigned',
            {
              ...base,
              agentId: next.agentId ?? null,
              previousAgentId: current.agentId ?? null,
              assignment: next.assignment ?? null,
            },
            origin.requestId,
          ),
        ]
      : []),
    ...(outcome.scoreChanged
      ? [
          outboxEntry(
            'leads.lead.scored',
            { ...base, score: next.score, previousScore: current.score, scoreSource: next.scoreSource },
            origin.requestId,
          ),
        ]
      : []),
    ...outcome.activities.map((a) => recordedEvent(origin, next, a)),
  ];
}

function recordedEvent(origin: ChangeOrigin, lead: LeadRecord, activity: Activity): OutboxEntry {
  return outboxEntry(
    'leads.activity.recorded',
    {
      accountId: origin.accountId,
      leadId: lead.id,
      leadVersion: lead.version,
      activityId: activity.id,
      version: 1,
      occurredAt: activity.recordedAt,
      activity,
    },
    origin.requestId,
  );
}
