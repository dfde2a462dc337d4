import type { Identity } from '@estate/contracts/accounts';
import type { EventPayload } from '@estate/contracts/events';
import {
  ACTIVITY_DATA_MAX_BYTES,
  type Activity,
  type ActivityCreate,
  type ActivityQuery,
} from '@estate/contracts/leads';
import { Unprocessable } from '@estate/bus';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { decodeCursor, type SortOrder } from '@estate/platform/pagination';
import { allOf, keyset, pageOf } from '@estate/store';
import type { Filter } from '@estate/store';
import type { Logger } from 'pino';
import { ACTIVITY_WRITERS, LEAD_READERS, assertVisible, originOf } from './lead-access.rules';
import { activityIdForEvent, type ChangeOrigin, type NewActivity } from './lead.rules';
import type { LeadWriter } from './lead-writer.service';
import type { ActivityRepository } from './repositories/activity.repository';
import type { LeadRepository } from './repositories/lead.repository';

export interface ActivitiesDeps {
  writer: LeadWriter;
  leads: LeadRepository;
  activities: ActivityRepository;
  clock: () => Date;
  log: Logger;
}

const TIMELINE_ORDER: SortOrder = { field: 'occurredAt', direction: -1 };
/** How far ahead of our clock an `occurredAt` may be (clients' clocks drift). */
const FUTURE_SKEW_MS = 5 * 60 * 1000;

/** Why an activity cannot be stored as given: too large (413), or keys no store accepts (422). */
export function activityProblem(data: Record<string, unknown> | undefined): AppError | null {
  if (data === undefined) return null;
  // Depth first: serialising a value nested thousands deep would overflow the stack.
  const bad = badKey(data);
  if (bad)
    return new AppError('validation_failed', 'The activity data has a key or a depth the store cannot keep', {
      errors: [bad],
    });
  const bytes = Buffer.byteLength(JSON.stringify(data), 'utf8');
  if (bytes > ACTIVITY_DATA_MAX_BYTES)
    return new AppError(
      'payload_too_large',
      `The activity data is ${bytes} bytes as JSON; at most ${ACTIVITY_DATA_MAX_BYTES} are kept`,
    );
  return null;
}

/** Nesting deeper than this is refused: no timeline needs it, and every reader would have to walk it. */
const ACTIVITY_DATA_MAX_DEPTH = 32;

/** The first key no store accepts, or the first value nested too deep; walked without recursion. */
function badKey(data: Record<string, unknown>): { path: string; message: string } | null {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [{ value: data, path: 'data', depth: 1 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path, depth } = next;
    if (value === null || typeof value !== 'object') continue;
    if (depth > ACTIVITY_DATA_MAX_DEPTH)
      return { path, message: `may be nested at most ${ACTIVITY_DATA_MAX_DEPTH} levels deep` };
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    for (const [k, v] of entries.reverse()) {
      if (!Array.isArray(value) && (k.includes('.') || k.startsWith('$')))
        return { path: `${path}.${k}`, message: 'keys may not contain "." or start with "$"' };
      pending.push({ value: v, path: `${path}.${k}`, depth: depth + 1 });
    }
  }
  return null;
}

export class ActivitiesService {
  constructor(private readonly deps: ActivitiesDeps) {}

  /** The timeline, newest `occurredAt` first. */
  async list(
    who: Identity,
    leadId: string,
    query: ActivityQuery,
  ): Promise<{ items: Activity[]; nextCursor: string | null; total: number }> {
    assertRole(who, LEAD_READERS, 'read lead activities');
    const stored = await this.deps.leads.get(who.accountId, leadId);
    if (!stored) throw notFound('lead_not_found', 'Lead', leadId);
    assertVisible(who, stored.lead);
    const filter: Filter = { accountId: who.accountId, leadId, ...(query.type ? { type: { $in: query.type } } : {}) };
    const { sort, after } = keyset(TIMELINE_ORDER, decodeCursor(query.cursor, who.accountId));
    const [fetched, total] = await Promise.all([
      this.deps.activities.find(allOf([filter, after]), { sort, limit: query.limit + 1 }),
      this.deps.activities.count(filter),
    ]);
    return { ...pageOf(fetched, query.limit, TIMELINE_ORDER, who.accountId), total };
  }

  /** `POST /v1/leads/:id/activities`. */
  async record(ctx: RequestContext, leadId: string, input: ActivityCreate): Promise<Activity> {
    assertRole(ctx.who, ACTIVITY_WRITERS, 'record lead activities');
    const problem = activityProblem(input.data);
    if (problem) throw problem;
    const activity = this.newActivity(input);
    const who = ctx.who;
    const { activities } = await this.deps.writer.change(originOf(ctx), leadId, (cur) => {
      assertVisible(who, cur);
      return { activities: [activity] };
    });
    return activities[0];
  }

  /**
   * `leads.activity.record` from the bus: recorded once per event id, however often it is
   * delivered. The activity id is derived from the event id; the lead remembers the ids it
   * applied and the timeline holds them, so a redelivery finds its activity in one or the other.
   */
  async recordFromBus(
    payload: EventPayload<'leads.activity.record'>,
    requestId?: string,
  ): Promise<'recorded' | 'duplicate'> {
    const id = activityIdForEvent(payload.accountId, payload.eventId);
    if (await this.deps.activities.exists(payload.accountId, id)) return 'duplicate';
    const problem = activityProblem(payload.activity.data);
    if (problem) throw new Unprocessable(`activity ${payload.eventId}: ${problem.detail}`);
    let activity: NewActivity;
    try {
      activity = {
        ...this.newActivity({ ...payload.activity, occurredAt: payload.activity.occurredAt ?? payload.occurredAt }),
        id,
      };
    } catch (err) {
      throw new Unprocessable(`activity ${payload.eventId}: ${(err as Error).message}`);
    }
    const origin: ChangeOrigin = {
      accountId: payload.accountId,
      actor: { type: 'service', id: payload.source, agentId: null },
      requestId,
    };
    try {
      const { written } = await this.deps.writer.change(origin, payload.leadId, (cur) =>
        cur.appliedActivityIds.includes(id) ? null : { activities: [activity] },
      );
      return written ? 'recorded' : 'duplicate';
    } catch (err) {
      if (err instanceof AppError && err.code === 'lead_not_found')
        throw new Unprocessable(
          `activity ${payload.eventId}: lead ${payload.leadId} does not exist in account ${payload.accountId}`,
        );
      throw err;
    }
  }

  /** Lands an activity announced by `leads.activity.recorded` on the timeline (idempotent). */
  async materialize(payload: EventPayload<'leads.activity.recorded'>): Promise<boolean> {
    // Usually the request wrote it through already: a read is cheaper than a refused insert.
    if (await this.deps.activities.exists(payload.accountId, payload.activityId)) return false;
    return this.deps.activities.insertIfAbsent(payload.accountId, payload.activity);
  }

  private newActivity(input: ActivityCreate): NewActivity {
    const now = this.deps.clock().getTime();
    const occurredAt = input.occurredAt ? new Date(input.occurredAt) : undefined;
    if (occurredAt && occurredAt.getTime() > now + FUTURE_SKEW_MS) {
      throw new AppError('validation_failed', 'The activity is dated in the future', {
        errors: [{ path: 'occurredAt', message: 'must not be in the future' }],
      });
    }
    return {
      type: input.type,
      customType: input.customType,
      occurredAt: occurredAt?.toISOString(),
      summary: input.summary || undefined,
      data: input.data,
      listingId: input.listingId,
    };
  }
}
