import { createHash } from 'node:crypto';
import type { BusMessage } from '@estate/bus';
import type { MediaStatus } from '@estate/contracts/media';
import { eventTypes, type EventType } from '@estate/contracts/webhooks';

/** The domain events this service turns into client events (section 8: every durable event, no commands). */
export const consumedSubjects = {
  listings: [
    'listings.listing.created',
    'listings.listing.updated',
    'listings.listing.deleted',
    'listings.bulk-job.completed',
  ],
  media: ['media.media.changed'],
  leads: [
    'leads.lead.created',
    'leads.lead.updated',
    'leads.lead.assigned',
    'leads.lead.scored',
    'leads.activity.recorded',
  ],
} as const;
export type ConsumedSubject = (typeof consumedSubjects)[keyof typeof consumedSubjects][number];

/** Where a client event's `data` comes from: the event itself, or the owning service (as `GET` answers). */
export type DataSource =
  | { kind: 'inline'; data: Record<string, unknown> }
  | { kind: 'lead'; leadId: string }
  | { kind: 'media'; listingId: string; mediaId: string };

export interface PlannedEvent {
  /** Stable per domain event and client event: the same domain event seen twice plans the same ids. */
  id: string;
  /** The client event type; for media it is decided by the item's status once read (see {@link mediaEventType}). */
  type: EventType | 'media';
  accountId: string;
  createdAt: string;
  source: DataSource;
  /**
   * Where the event stands among the events of its resource: the entity's version after the change
   * (an activity: its lead's), the same however late or by which replica the event is processed.
   */
  ordinal: number;
}

/**
 * Orders one resource's deliveries to one endpoint: the event's ordinal, then its place among the
 * client events of its domain event (a status change's `lead.updated` before its `lead.status_changed`).
 */
export function deliverySeq(ordinal: number, place: number): string {
  return `${String(ordinal).padStart(12, '0')}.${String(place).padStart(3, '0')}`;
}

/** The client event id of one client event made from one domain event. */
export function clientEventId(domainEventId: string, type: string, part = ''): string {
  const digest = createHash('sha256').update(`${domainEventId}\n${type}\n${part}`).digest('base64url');
  return `evt_${digest.slice(0, 26)}`;
}

function planned(
  m: { payload: { eventId: string; accountId: string; occurredAt: string; version: number; leadVersion?: number } },
  type: PlannedEvent['type'],
  source: DataSource,
  part = '',
): PlannedEvent {
  return {
    id: clientEventId(m.payload.eventId, type, part),
    type,
    accountId: m.payload.accountId,
    createdAt: m.payload.occurredAt,
    source,
    ordinal: m.payload.leadVersion ?? m.payload.version,
  };
}

/**
 * The client events one domain event makes, in the order they are recorded. A lead's score change is
 * a `lead.updated` (the score is a field of the lead); a status change is both `lead.updated` and
 * `lead.status_changed`; a media change reports the images whose processing finished.
 */
export function planEvents(m: BusMessage<ConsumedSubject>): PlannedEvent[] {
  switch (m.subject) {
    case 'listings.listing.created':
      return [planned(m, 'listing.created', { kind: 'inline', data: m.payload.listing })];
    case 'listings.listing.updated':
      return [planned(m, 'listing.updated', { kind: 'inline', data: m.payload.listing })];
    case 'listings.listing.deleted':
      return [
        planned(m, 'listing.deleted', {
          kind: 'inline',
          data: { id: m.payload.listingId, deleted: true, version: m.payload.version },
        }),
      ];
    case 'listings.bulk-job.completed':
      // Any final state: the job as `GET /v1/jobs/:id` answers it, with its counts.
      return [planned(m, 'job.completed', { kind: 'inline', data: m.payload.job })];
    case 'media.media.changed':
      if (m.payload.change !== 'processed') return [];
      return m.payload.mediaIds.map((mediaId) =>
        planned(m, 'media', { kind: 'media', listingId: m.payload.listingId, mediaId }, mediaId),
      );
    case 'leads.lead.created':
      return [planned(m, 'lead.created', { kind: 'lead', leadId: m.payload.leadId })];
    case 'leads.lead.updated': {
      const lead = { kind: 'lead', leadId: m.payload.leadId } as const;
      const events = [planned(m, 'lead.updated', lead)];
      if (m.payload.changes.includes('status')) events.push(planned(m, 'lead.status_changed', lead));
      return events;
    }
    case 'leads.lead.assigned':
      return [planned(m, 'lead.assigned', { kind: 'lead', leadId: m.payload.leadId })];
    case 'leads.lead.scored':
      return [planned(m, 'lead.updated', { kind: 'lead', leadId: m.payload.leadId })];
    case 'leads.activity.recorded':
      return [planned(m, 'activity.created', { kind: 'inline', data: m.payload.activity })];
  }
}

/** The client event of a processed image: ready or failed; null while it is still processing. */
export function mediaEventType(status: MediaStatus): EventType | null {
  if (status === 'ready') return 'media.ready';
  if (status === 'failed') return 'media.failed';
  return null;
}

/** Whether an endpoint subscribed to `events` receives an event of `type`. */
export const subscribes = (events: readonly string[], type: string): boolean =>
  events.includes('*') || events.includes(type);

/** Event types about the lead pipeline: their `data` is a lead or its activity. */
export const pipelineEventTypes: readonly EventType[] = [
  'lead.created',
  'lead.updated',
  'lead.assigned',
  'lead.status_changed',
  'activity.created',
];

/**
 * Which event types a key of this role reads in the change feed, of those it asked for (`all`: every
 * type). An integration key reads no pipeline (SPEC §4): its feed carries no lead or activity events,
 * and naming one is refused rather than answered with pages that stay empty.
 */
export function feedTypesFor(
  role: string,
  asked: readonly EventType[] | undefined,
): { types: readonly EventType[] | 'all' } | { refused: readonly EventType[] } {
  if (role !== 'integration') return { types: asked ?? 'all' };
  const refused = asked?.filter((type) => pipelineEventTypes.includes(type)) ?? [];
  if (refused.length > 0) return { refused };
  return { types: (asked ?? eventTypes).filter((type) => !pipelineEventTypes.includes(type)) };
}
