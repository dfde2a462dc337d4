import type { Identity } from '@estate/contracts/accounts';
import {
  leadStatuses,
  leadWritable,
  type Lead,
  type LeadCapture,
  type LeadCaptured,
  type LeadPatch,
  type LeadSearchQuery,
} from '@estate/contracts/leads';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { decodeCursor, parseSort, type SortOrder } from '@estate/platform/pagination';
import { allOf, keyset, pageOf } from '@estate/store';
import { DuplicateKeyError, type Filter } from '@estate/store';
import type { Logger } from 'pino';
import { e164Or422, searchTerms, slugify, toE164 } from './contact.rules';
import { assertVisible, LEAD_CAPTURERS, LEAD_READERS, originOf } from './lead-access.rules';
import { leadView } from './lead-views.rules';
import type { Change, ChangeOrigin, LeadFields, NewActivity } from './lead.rules';
import type { LeadWriter } from './lead-writer.service';
import { canTransition, isOpen, nextStatuses } from './pipeline.rules';
import type { AgentRepository } from './repositories/agent.repository';
import type { LeadRecord, LeadRepository } from './repositories/lead.repository';
import type { ListingSummariesService } from './listing-summaries.service';
import type { KnownListings, ListingSummaryRepository } from './repositories/listing-summary.repository';
import type { RoutingService } from './routing.service';

export interface LeadsDeps {
  writer: LeadWriter;
  leads: LeadRepository;
  agents: AgentRepository;
  listings: ListingSummaryRepository;
  /** Asks about the listings a capture names that no event has brought yet. */
  listingSummaries: ListingSummariesService;
  routing: RoutingService;
  clock: () => Date;
  log: Logger;
}

const SORT_FIELDS: Record<string, string> = {
  score: 'score',
  createdAt: 'createdAt',
  lastActivityAt: 'lastActivityAt',
};
const DEFAULT_ORDER: SortOrder = { field: 'createdAt', direction: -1 };
/** Property interests a lead keeps; captures beyond it add nothing more. */
const MAX_INTERESTS = 50;
const MAX_TAGS = 50;

const uniqueTags = (tags: readonly string[]) => [...new Set(tags)].slice(0, MAX_TAGS);

function mergeInterests(
  current: LeadRecord['propertyInterests'],
  added: LeadRecord['propertyInterests'],
): LeadRecord['propertyInterests'] {
  const out = [...current];
  for (const i of added) if (!out.some((o) => o.listingId === i.listingId) && out.length < MAX_INTERESTS) out.push(i);
  return out;
}

/** Inclusive bound: a bare date covers its whole day (UTC). */
function bound(raw: string | undefined, end: 'from' | 'to'): string | undefined {
  if (raw === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}$/.test(raw)) return `${raw}T${end === 'from' ? '00:00:00.000' : '23:59:59.999'}Z`;
  return new Date(raw).toISOString();
}

function range(
  filter: Filter,
  field: string,
  from: string | number | undefined,
  to: string | number | undefined,
  names: [string, string],
): void {
  if (from === undefined && to === undefined) return;
  if (from !== undefined && to !== undefined && from > to) {
    throw new AppError('validation_failed', `${names[0]} is after ${names[1]}`, {
      errors: [{ path: names[0], message: `must not be above ${names[1]}` }],
    });
  }
  filter[field] = { ...(from !== undefined ? { $gte: from } : {}), ...(to !== undefined ? { $lte: to } : {}) };
}

/** The client-writable part of a lead: what a merge patch applies to. The score is there only while it is manual. */
function writableView(lead: LeadRecord): Record<string, unknown> {
  return {
    name: lead.name,
    ...(lead.email ? { email: lead.email } : {}),
    ...(lead.phone ? { phone: lead.phone } : {}),
    status: lead.status,
    ...(lead.agentId ? { agentId: lead.agentId } : {}),
    ...(lead.scoreSource === 'manual' ? { score: lead.score } : {}),
    tags: lead.tags,
  };
}

export class LeadsService {
  constructor(private readonly deps: LeadsDeps) {}

  /** A new person is a new lead (201); someone the account knows by email or phone gets the inquiry on their lead (200). */
  async capture(ctx: RequestContext, input: LeadCapture): Promise<{ lead: LeadCaptured; duplicate: boolean }> {
    assertRole(ctx.who, LEAD_CAPTURERS, 'capture leads');
    const phone = e164Or422(input.phone);
    const email = input.email;
    const source = slugify(input.source ?? 'unknown');
    const interests = mergeInterests(
      [],
      (input.propertyInterests ?? []).map((i) =>
        i.note ? { listingId: i.listingId, note: i.note } : { listingId: i.listingId },
      ),
    );
    const tags = uniqueTags(input.tags ?? []);
    const inquiry = (duplicate: boolean): NewActivity => ({
      type: 'inquiry',
      summary: input.message ?? `Inquiry via ${source}`,
      data: { source, duplicate, listingIds: interests.map((i) => i.listingId) },
      listingId: interests[0]?.listingId,
    });
    const origin = originOf(ctx);
    // Read once here: the score and the answer below use what this read (a duplicate's older interests are read then).
    const known = await this.deps.listingSummaries.learn(
      ctx,
      interests.map((i) => i.listingId),
    );

    let lead: LeadRecord | undefined;
    let duplicate = false;
    for (let attempt = 0; attempt < 3 && !lead; attempt++) {
      const existing = await this.deps.leads.findByContact(ctx.who.accountId, { email, phone });
      if (!existing) {
        try {
          lead = await this.deps.writer.create(
            origin,
            { name: input.name, email, phone, source, tags, propertyInterests: interests },
            [inquiry(false)],
            known,
          );
        } catch (err) {
          // The same person captured at the same moment by another request: theirs won, ours becomes the duplicate.
          if (!(err instanceof DuplicateKeyError)) throw err;
        }
        continue;
      }
      duplicate = true;
      lead = await this.mergeCapture(origin, existing.lead.id, { email, phone, tags, interests }, inquiry(true), known);
    }
    if (!lead) throw new AppError('conflict', 'The lead is being captured by another request at this moment; retry');

    let routing: LeadCaptured['routing'];
    if (input.autoRoute) ({ lead, routing } = await this.autoRoute(ctx, lead));
    const view = leadView(
      lead,
      await this.deps.listings.resolve(
        lead.accountId,
        lead.propertyInterests.map((i) => i.listingId),
        known,
      ),
    );
    return { lead: { ...view, duplicate, ...(routing ? { routing } : {}) }, duplicate };
  }

  /** New interests and tags join the existing lead, a missing email or phone is filled in; the name stays. */
  private async mergeCapture(
    origin: ChangeOrigin,
    leadId: string,
    add: { email?: string; phone?: string; tags: string[]; interests: LeadRecord['propertyInterests'] },
    inquiry: NewActivity,
    known: KnownListings,
  ): Promise<LeadRecord> {
    const merge =
      (fillContact: boolean) =>
      (cur: LeadRecord): Change => ({
        fields: {
          propertyInterests: mergeInterests(cur.propertyInterests, add.interests),
          tags: uniqueTags([...cur.tags, ...add.tags]),
          ...(fillContact && !cur.email && add.email ? { email: add.email } : {}),
          ...(fillContact && !cur.phone && add.phone ? { phone: add.phone } : {}),
        },
        activities: [inquiry],
      });
    try {
      return (await this.deps.writer.change(origin, leadId, merge(true), { known })).lead;
    } catch (err) {
      // The other channel belongs to another lead of the account: keep the leads apart.
      if (!(err instanceof DuplicateKeyError)) throw err;
      return (await this.deps.writer.change(origin, leadId, merge(false), { known })).lead;
    }
  }

  private async autoRoute(
    ctx: RequestContext,
    lead: LeadRecord,
  ): Promise<{ lead: LeadRecord; routing: NonNullable<LeadCaptured['routing']> }> {
    if (lead.agentId)
      return {
        lead,
        routing: { outcome: 'already_assigned', detail: `The lead is already assigned to ${lead.agentId}` },
      };
    if (!isOpen(lead.status))
      return {
        lead,
        routing: { outcome: 'not_open', detail: `The lead is ${lead.status}; only open leads are routed` },
      };
    try {
      const routed = await this.deps.routing.routeLead(originOf(ctx), lead.id);
      return {
        lead: routed,
        routing: { outcome: 'assigned', detail: routed.assignment?.reason ?? `Assigned to ${routed.agentId}` },
      };
    } catch (err) {
      if (err instanceof AppError && err.code === 'no_agent_available')
        return { lead, routing: { outcome: 'no_agent_available', detail: err.detail } };
      throw err;
    }
  }

  async get(who: Identity, id: string): Promise<Lead> {
    assertRole(who, LEAD_READERS, 'read leads');
    const stored = await this.deps.leads.get(who.accountId, id);
    if (!stored) throw notFound('lead_not_found', 'Lead', id);
    assertVisible(who, stored.lead);
    return this.view(stored.lead);
  }

  async view(lead: LeadRecord): Promise<Lead> {
    return leadView(
      lead,
      await this.deps.listings.resolve(
        lead.accountId,
        lead.propertyInterests.map((i) => i.listingId),
      ),
    );
  }

  async search(
    who: Identity,
    query: LeadSearchQuery,
  ): Promise<{ items: Lead[]; nextCursor: string | null; total: number }> {
    assertRole(who, LEAD_READERS, 'search leads');
    const filter: Filter = { accountId: who.accountId };
    if (who.role === 'agent') {
      // An agent's search never reaches past its own leads, whatever the filter asks.
      if (query.agentId !== undefined && query.agentId !== who.agentId)
        return { items: [], nextCursor: null, total: 0 };
      filter.agentId = who.agentId;
    } else if (query.agentId === 'unassigned') {
      filter.agentId = { $exists: false };
    } else if (query.agentId !== undefined) {
      filter.agentId = query.agentId;
    }
    if (query.status) filter.status = { $in: query.status };
    if (query.source) filter.source = { $in: query.source.map(slugify) };
    if (query.listingId) filter.interestListingIds = query.listingId;
    range(filter, 'createdAt', bound(query.createdFrom, 'from'), bound(query.createdTo, 'to'), [
      'createdFrom',
      'createdTo',
    ]);
    range(filter, 'lastActivityAt', bound(query.activityFrom, 'from'), bound(query.activityTo, 'to'), [
      'activityFrom',
      'activityTo',
    ]);
    range(filter, 'score', query.minScore, query.maxScore, ['minScore', 'maxScore']);
    const terms = query.q ? searchTerms(query.q) : [];
    const where: Filter =
      terms.length > 0 ? allOf([filter, { $and: terms.map((forms) => ({ searchTokens: { $in: forms } })) }]) : filter;

    const order = parseSort(query.sort, SORT_FIELDS, DEFAULT_ORDER);
    const { sort, after } = keyset(order, decodeCursor(query.cursor, who.accountId));
    const [fetched, total] = await Promise.all([
      this.deps.leads.find(allOf([where, after]), { sort, limit: query.limit + 1 }),
      this.deps.leads.count(where),
    ]);
    const page = pageOf(fetched, query.limit, order, who.accountId);
    const listings = await this.deps.listings.resolve(
      who.accountId,
      page.items.flatMap((l) => l.propertyInterests.map((i) => i.listingId)),
    );
    return { items: page.items.map((l) => leadView(l, listings)), nextCursor: page.nextCursor, total };
  }

  /** JSON merge patch of the writable fields; the status moves only along the pipeline. */
  async update(ctx: RequestContext, id: string, patch: LeadPatch, ifMatch?: number): Promise<Lead> {
    assertRole(ctx.who, LEAD_READERS, 'change leads');
    const who = ctx.who;
    try {
      const { lead } = await this.deps.writer.change(originOf(ctx), id, (cur) => this.patchChange(who, cur, patch), {
        ifMatch,
      });
      return await this.view(lead);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // Another lead of the account has this email or phone (only admins change contacts, so they may know which).
      const email = typeof patch.email === 'string' ? patch.email : undefined;
      const phone = typeof patch.phone === 'string' ? (toE164(patch.phone) ?? undefined) : undefined;
      const taken = await this.deps.leads.findByContact(who.accountId, { email, phone });
      throw new AppError('lead_exists', 'Another lead of the account already has this email or phone', {
        fields: taken && taken.lead.id !== id ? { existingId: taken.lead.id } : {},
      });
    }
  }

  private async patchChange(who: Identity, cur: LeadRecord, patch: LeadPatch): Promise<Change | null> {
    assertVisible(who, cur);
    const parsed = leadWritable.safeParse(applyMergePatch(writableView(cur), patch));
    if (!parsed.success) throw validationError(parsed.error, [], 'The lead would not be valid after this change');
    const next = parsed.data;
    if (next.status !== cur.status && !canTransition(cur.status, next.status)) {
      const allowed = nextStatuses(cur.status, leadStatuses);
      throw new AppError(
        'invalid_transition',
        `A lead cannot move from ${cur.status} to ${next.status}${allowed.length ? `; from ${cur.status} it may move to ${allowed.join(', ')}` : `; ${cur.status} is final`}`,
        {
          fields: { from: cur.status, to: next.status, allowed },
        },
      );
    }
    const phone = next.phone === cur.phone ? cur.phone : e164Or422(next.phone);
    if (who.role !== 'admin' && (next.email !== cur.email || phone !== cur.phone))
      // The account's leads are unique by email and phone: an agent's change could only be refused by a lead
      // it may not see, so whether a contact is taken would leak. Admins change contacts (decision 0047).
      throw new AppError(
        'forbidden',
        "Only an admin may change a lead's email or phone; log the new contact as a note",
      );
    const fields: Partial<LeadFields> = {
      name: next.name,
      email: next.email,
      phone,
      status: next.status,
      tags: uniqueTags(next.tags ?? []),
      score: next.score ?? cur.score,
      scoreSource: next.score !== undefined ? 'manual' : 'engine',
      agentId: next.agentId,
    };
    const change: Change = { fields };
    if ((next.agentId ?? null) !== (cur.agentId ?? null)) {
      if (who.role !== 'admin') throw new AppError('forbidden', 'Only an admin may assign a lead to another agent');
      if (next.agentId && !(await this.deps.agents.get(who.accountId, next.agentId))) {
        throw new AppError('validation_failed', 'No such agent', {
          errors: [{ path: 'agentId', message: `agent ${next.agentId} does not exist in this account` }],
        });
      }
      change.assignment = {
        ruleId: null,
        strategy: 'manual',
        reason: `assigned by key ${who.keyId}`,
        assignedAt: this.deps.clock().toISOString(),
      };
    }
    return change;
  }
}
