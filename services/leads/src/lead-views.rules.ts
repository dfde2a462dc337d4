import type { Activity, ActivitySummary, Lead, LeadEventView, LeadListingSummary } from '@estate/contracts/leads';
import type { LeadRecord } from './repositories/lead.repository';

/** How many of the newest activities a lead carries (the timeline has them all). */
export const RECENT_ACTIVITIES = 5;

/** The lead as the API answers it, with its interests resolved from the listing projection. */
export function leadView(lead: LeadRecord, listings: ReadonlyMap<string, LeadListingSummary>): Lead {
  return {
    ...leadEventView(lead),
    assignment: lead.assignment ?? null,
    scoreBreakdown: lead.scoreBreakdown,
    propertyInterests: lead.propertyInterests.map((i) => ({
      listingId: i.listingId,
      note: i.note ?? null,
      listing: listings.get(i.listingId) ?? null,
    })),
    latestActivities: lead.recentActivities,
  };
}

/** The lead as events carry it: no breakdown, no resolved listings, no timeline. */
export function leadEventView(lead: LeadRecord): LeadEventView {
  return {
    id: lead.id,
    name: lead.name,
    email: lead.email ?? null,
    phone: lead.phone ?? null,
    source: lead.source,
    status: lead.status,
    agentId: lead.agentId ?? null,
    score: lead.score,
    scoreSource: lead.scoreSource,
    tags: lead.tags,
    propertyInterests: lead.propertyInterests.map((i) => ({ listingId: i.listingId, note: i.note ?? null })),
    createdAt: lead.createdAt,
    updatedAt: lead.updatedAt,
    lastActivityAt: lead.lastActivityAt,
    version: lead.version,
  };
}

export function activitySummaryOf(a: Activity): ActivitySummary {
  return {
    id: a.id,
    type: a.type,
    customType: a.customType,
    occurredAt: a.occurredAt,
    summary: a.summary,
    listingId: a.listingId,
  };
}

/** Timeline order: newest `occurredAt` first, ties by id (the same order the timeline query uses). */
export function newestFirst(a: { occurredAt: string; id: string }, b: { occurredAt: string; id: string }): number {
  return b.occurredAt.localeCompare(a.occurredAt) || b.id.localeCompare(a.id);
}
