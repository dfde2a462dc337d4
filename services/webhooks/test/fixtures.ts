import type { Bus } from '@estate/bus';
import type { Job } from '@estate/contracts/jobs';
import type { Lead, LeadEventView } from '@estate/contracts/leads';
import type { Listing } from '@estate/contracts/listings';
import type { Media } from '@estate/contracts/media';
import { eventId, type ResourceShelf } from './harness';

const at = '2026-01-01T00:00:00.000Z';

/** A listing as the listings service publishes it. */
export function listing(id: string, version = 1, listPrice = 450000): Listing {
  return {
    id,
    status: 'active',
    pricing: { listPrice, currency: 'USD', pricePerArea: null },
    propertyDetails: { propertyType: 'residential', livingAreaUnits: 'sqft' },
    location: {
      address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: at,
    version,
    createdAt: at,
    updatedAt: at,
  };
}

export async function listingEvent(
  bus: Bus,
  accountId: string,
  subject: 'listings.listing.created' | 'listings.listing.updated',
  l: Listing,
): Promise<void> {
  await bus.publish(subject, {
    eventId: eventId(),
    accountId,
    listingId: l.id,
    version: l.version,
    occurredAt: new Date().toISOString(),
    listing: l,
  });
}

export async function listingDeleted(bus: Bus, accountId: string, listingId: string, version: number): Promise<void> {
  await bus.publish('listings.listing.deleted', {
    eventId: eventId(),
    accountId,
    listingId,
    version,
    occurredAt: new Date().toISOString(),
  });
}

/** A lead as `GET /v1/leads/:id` answers it (the fields the tests look at). */
export function lead(id: string, version = 1, status: Lead['status'] = 'new'): Lead {
  return {
    id,
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: null,
    source: 'website',
    status,
    agentId: null,
    assignment: null,
    score: 40,
    scoreSource: 'engine',
    scoreBreakdown: { engineScore: 40 } as Lead['scoreBreakdown'],
    tags: [],
    propertyInterests: [],
    latestActivities: [],
    createdAt: at,
    updatedAt: at,
    lastActivityAt: at,
    version,
  };
}

export function leadView(l: Lead): LeadEventView {
  const { assignment: _a, scoreBreakdown: _b, latestActivities: _c, propertyInterests: _d, ...rest } = l;
  return { ...rest, propertyInterests: [] };
}

/** Puts the lead where the reader finds it, then publishes its event. */
export async function leadEvent(
  bus: Bus,
  shelf: ResourceShelf,
  accountId: string,
  subject: 'leads.lead.created' | 'leads.lead.updated',
  l: Lead,
  changes: string[] = [],
): Promise<void> {
  shelf.leads.set(l.id, { ...l, accountId });
  await bus.publish(subject, {
    eventId: eventId(),
    accountId,
    leadId: l.id,
    version: l.version,
    occurredAt: new Date().toISOString(),
    lead: leadView(l),
    changes,
  });
}

export function image(id: string, listingId: string, status: Media['status']): Media {
  return {
    id,
    listingId,
    kind: 'image',
    caption: null,
    order: 0,
    isPrimary: true,
    status,
    failureReason: status === 'failed' ? 'corrupt image' : null,
    width: 800,
    height: 600,
    bytes: 1000,
    contentType: 'image/jpeg',
    url: null,
    urls: null,
    version: 2,
    createdAt: at,
    updatedAt: at,
  };
}

export async function mediaProcessed(bus: Bus, shelf: ResourceShelf, accountId: string, item: Media): Promise<void> {
  shelf.media.set(item.id, { ...item, accountId });
  await bus.publish('media.media.changed', {
    eventId: eventId(),
    accountId,
    listingId: item.listingId,
    version: item.version,
    occurredAt: new Date().toISOString(),
    change: 'processed',
    mediaIds: [item.id],
    summary: { photoCount: 1, primaryPhoto: null, virtualTours: [] },
  });
}

/** An ended bulk job as `GET /v1/jobs/:id` answers it. */
export function endedJob(id: string): Job {
  return {
    id,
    type: 'listings.bulk_upsert',
    state: 'partially_failed',
    progress: { total: 2, processed: 2, succeeded: 1, failed: 1 },
    results: [{ index: 0, id: 'lst_bulk_1', action: 'created' }],
    errors: [
      { index: 1, code: 'validation_failed', message: 'pricing.listPrice: required', path: 'pricing.listPrice' },
    ],
    createdAt: at,
    startedAt: at,
    finishedAt: at,
  };
}

/** What the listings service publishes when a bulk job ends. */
export async function jobCompleted(bus: Bus, accountId: string, job: Job): Promise<void> {
  await bus.publish('listings.bulk-job.completed', {
    eventId: `${job.id}:completed`,
    accountId,
    jobId: job.id,
    version: 2,
    occurredAt: job.finishedAt ?? at,
    job,
  });
}
