import { randomUUID } from 'node:crypto';
import type { BusMessage } from '@estate/bus';
import type { EventEnvelope } from '@estate/contracts/webhooks';
import type { Logger } from 'pino';
import type { ResourceReader } from './clients/resources.client';
import { mediaEventType, planEvents, subscribes, type ConsumedSubject, type PlannedEvent } from './event.rules';
import { deliveryId, type DeliveryRepository } from './repositories/delivery.repository';
import type { EndpointRepository } from './repositories/endpoint.repository';
import type { FeedRepository } from './repositories/feed.repository';

/**
 * Turns each domain event into client events: appended to the account's feed, and queued as a
 * delivery to every enabled endpoint of the account that subscribes to the type. Idempotent: ids
 * are derived from the domain event, so a redelivered event adds nothing.
 */
export class EventIntakeService {
  constructor(
    private readonly deps: {
      feed: FeedRepository;
      endpoints: EndpointRepository;
      deliveries: DeliveryRepository;
      resources: ResourceReader;
      /** Wakes the delivery worker when deliveries were queued. */
      onQueued: () => void;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  async handle(message: BusMessage<ConsumedSubject>): Promise<void> {
    let queued = 0;
    for (const plan of planEvents(message)) {
      const envelope = await this.resolve(plan);
      if (!envelope) continue;
      await this.deps.feed.append(envelope, this.deps.clock());
      queued += await this.fanOut(envelope);
    }
    if (queued > 0) this.deps.onQueued();
  }

  /** Queues one event to every subscribed enabled endpoint of its account; how many were new. */
  async fanOut(envelope: EventEnvelope): Promise<number> {
    const endpoints = (await this.deps.endpoints.enabledOf(envelope.accountId)).filter((e) =>
      subscribes(e.events, envelope.type),
    );
    const now = this.deps.clock().toISOString();
    const body = JSON.stringify(envelope);
    let queued = 0;
    for (const endpoint of endpoints) {
      const added = await this.deps.deliveries.enqueue({
        id: deliveryId(endpoint.id, envelope.id),
        accountId: envelope.accountId,
        webhookId: endpoint.id,
        eventId: envelope.id,
        eventType: envelope.type,
        resource: resourceOf(envelope),
        body,
        state: 'pending',
        attempts: 0,
        nextAttemptAt: now,
        createdAt: now,
      });
      if (added) queued++;
    }
    return queued;
  }

  /** The envelope with `data` as `GET` answers it; null when the resource is gone or has nothing to report. */
  private async resolve(plan: PlannedEvent): Promise<EventEnvelope | null> {
    const envelope = (type: EventEnvelope['type'], data: Record<string, unknown>): EventEnvelope => ({
      id: plan.id,
      type,
      createdAt: plan.createdAt,
      accountId: plan.accountId,
      data,
    });
    const { source } = plan;
    switch (source.kind) {
      case 'inline':
        return plan.type === 'media' ? null : envelope(plan.type, source.data);
      case 'lead': {
        // Read with the event's account: a lead of another account is not found, so nothing is reported.
        const lead = await this.deps.resources.lead(plan.accountId, source.leadId);
        if (!lead || plan.type === 'media') return this.skipped(plan);
        return envelope(plan.type, lead);
      }
      case 'media': {
        const item = await this.deps.resources.media(plan.accountId, source.listingId, source.mediaId);
        const type = item ? mediaEventType(item.status) : null;
        if (!item || !type) return this.skipped(plan);
        return envelope(type, item);
      }
    }
  }

  private skipped(plan: PlannedEvent): null {
    this.deps.log.debug({ eventId: plan.id, type: plan.type }, 'resource gone or unfinished; no client event');
    return null;
  }
}

/** What an event is about, e.g. `listing:lst_1` (an activity: its lead's). */
export function resourceOf(envelope: EventEnvelope): string {
  const { data } = envelope;
  if (envelope.type === 'activity.created' && typeof data.leadId === 'string') return `lead:${data.leadId}`;
  return `${envelope.type.split('.')[0]}:${String(data.id)}`;
}

/** A one-off event id (test events). */
export const newEventId = (): string => `evt_${randomUUID().replace(/-/g, '')}`;
