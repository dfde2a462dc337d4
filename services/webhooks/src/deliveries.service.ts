import { TEST_EVENT_TYPE, type Delivery, type DeliveryListQuery, type EventEnvelope } from '@estate/contracts/webhooks';
import { assertRole, type Identity } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import type { EndpointsService } from './endpoints.service';
import { newEventId } from './event-intake.service';
import { deliveryId, type DeliveryDoc, type DeliveryRepository } from './repositories/delivery.repository';

export function toDelivery(doc: DeliveryDoc): Delivery {
  return {
    id: doc.id,
    webhookId: doc.webhookId,
    eventId: doc.eventId,
    eventType: doc.eventType,
    state: doc.state,
    attempts: doc.attempts,
    lastStatusCode: doc.lastStatusCode ?? null,
    lastError: doc.lastError ?? null,
    lastResponseTimeMs: doc.lastResponseTimeMs ?? null,
    lastAttemptAt: doc.lastAttemptAt ?? null,
    // A claimed delivery's `nextAttemptAt` is its lease; to the owner it is being tried now.
    nextAttemptAt: doc.state === 'pending' ? (doc.nextAttemptAt ?? null) : null,
    createdAt: doc.createdAt,
  };
}

/** An endpoint's delivery log, manual retries and test events (admin keys only). */
export class DeliveriesService {
  constructor(
    private readonly deps: {
      endpoints: EndpointsService;
      deliveries: DeliveryRepository;
      onQueued: () => void;
      clock: () => Date;
    },
  ) {}

  async list(who: Identity, webhookId: string, query: DeliveryListQuery) {
    assertRole(who, ['admin'], 'manage webhooks');
    await this.deps.endpoints.owned(who, webhookId);
    const page = await this.deps.deliveries.list(who.accountId, webhookId, query);
    return { ...page, items: page.items.map(toDelivery) };
  }

  /** Sends the delivery again now, whatever its state (one more attempt; a failure does not restart the schedule). */
  async retry(who: Identity, webhookId: string, id: string): Promise<Delivery> {
    assertRole(who, ['admin'], 'manage webhooks');
    await this.deps.endpoints.owned(who, webhookId);
    const doc = await this.deps.deliveries.requeue(who.accountId, webhookId, id, this.deps.clock().toISOString());
    if (!doc) throw new AppError('delivery_not_found', `No delivery ${id} for webhook endpoint ${webhookId}`);
    this.deps.onQueued();
    return toDelivery(doc);
  }

  /** Queues a `webhook.test` event to this endpoint alone (it is not part of the feed). */
  async test(who: Identity, webhookId: string): Promise<Delivery> {
    assertRole(who, ['admin'], 'manage webhooks');
    const endpoint = await this.deps.endpoints.owned(who, webhookId);
    const now = this.deps.clock().toISOString();
    const envelope: EventEnvelope = {
      id: newEventId(),
      type: TEST_EVENT_TYPE,
      createdAt: now,
      accountId: who.accountId,
      data: { webhookId: endpoint.id, url: endpoint.url, message: 'A test event: this endpoint receives deliveries' },
    };
    const doc: DeliveryDoc = {
      id: deliveryId(endpoint.id, envelope.id),
      accountId: who.accountId,
      webhookId: endpoint.id,
      eventId: envelope.id,
      eventType: envelope.type,
      body: JSON.stringify(envelope),
      state: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      createdAt: now,
    };
    await this.deps.deliveries.enqueue(doc);
    this.deps.onQueued();
    return toDelivery(doc);
  }
}
