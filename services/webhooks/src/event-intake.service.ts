import { randomUUID } from 'node:crypto';
import type { BusMessage, UnitOfWork } from '@estate/bus';
import type { EventEnvelope } from '@estate/contracts/webhooks';
import type { Logger } from 'pino';
import type { ResourceReader } from './clients/resources.client';
import {
  deliverySeq,
  mediaEventType,
  planEvents,
  subscribes,
  type ConsumedSubject,
  type PlannedEvent,
} from './event.rules';
import { deliveryId, type DeliveryDoc, type DeliveryRepository } from './repositories/delivery.repository';
import type { EndpointRepository } from './repositories/endpoint.repository';
import type { FeedRepository } from './repositories/feed.repository';
import type { DeliveryWorker, Reservation } from './workers/delivery.worker';

interface Reserved {
  doc: DeliveryDoc;
  reservation: Reservation;
}

/** How the intake hands deliveries to this process's worker (see `DeliveryWorker`). */
export type Dispatcher = Pick<DeliveryWorker, 'reserve' | 'dispatch' | 'cancel' | 'queued'>;

/**
 * Turns each domain event into client events: appended to the account's feed, and queued as a
 * delivery to every enabled endpoint of the account that subscribes to the type. Idempotent: ids
 * are derived from the domain event, so a redelivered event adds nothing.
 *
 * A delivery this process has room to send is stored already claimed and sent as soon as it is
 * stored, without waiting for a poll; the others are stored due now for whichever worker is free.
 * One event's feed entries and deliveries are one unit of work (one commit where the store has transactions).
 *
 * Several events may be read at once (their resources, their account's endpoints), but their units are started in
 * the order the events were handed over: each waits until the unit of the event before it was started (or that
 * event turned out to need none). Where units run in the order they were started and commit together (SQLite), a
 * burst of events is stored in order with one commit.
 */
export class EventIntakeService {
  constructor(
    private readonly deps: {
      feed: FeedRepository;
      endpoints: EndpointRepository;
      deliveries: DeliveryRepository;
      resources: ResourceReader;
      dispatcher: Dispatcher;
      clock: () => Date;
      log: Logger;
      units: UnitOfWork;
    },
  ) {}

  /** Resolves when the unit of the event handed over last was started (or that event needs none). */
  private started: Promise<void> = Promise.resolve();

  async handle(message: BusMessage<ConsumedSubject>): Promise<void> {
    // Taken when the event is handed over, before any await: the order of the units is the order of the events.
    const before = this.started;
    let start!: () => void;
    this.started = new Promise<void>((resolve) => (start = resolve));
    let started: { committing: Promise<void> } | undefined;
    const reserved: Reserved[] = [];
    const queued = new Set<string>();
    try {
      started = await this.prepare(message, before, reserved, queued);
    } finally {
      start();
    }
    if (!started) return;
    try {
      await started.committing;
    } catch (err) {
      // Rolled back, or partly stored and retried with the event: nothing of it is sent from here.
      for (const { reservation } of reserved) this.deps.dispatcher.cancel(reservation);
      throw err;
    }
    for (const { doc, reservation } of reserved) this.deps.dispatcher.dispatch(doc, reservation);
    for (const webhookId of queued) this.deps.dispatcher.queued(webhookId);
  }

  /** Reads what the event's unit needs, waits for the unit before it to start, and starts its own (none: nothing to store). */
  private async prepare(
    message: BusMessage<ConsumedSubject>,
    before: Promise<void>,
    reserved: Reserved[],
    queued: Set<string>,
  ): Promise<{ committing: Promise<void> } | undefined> {
    const envelopes: { envelope: EventEnvelope; seq: string }[] = [];
    for (const [place, plan] of planEvents(message).entries()) {
      const envelope = await this.resolve(plan);
      if (envelope) envelopes.push({ envelope, seq: deliverySeq(plan.ordinal, place) });
    }
    if (envelopes.length === 0) return undefined;
    const endpoints = await this.deps.endpoints.enabledOf(message.payload.accountId);
    const record = async (): Promise<void> => {
      const now = this.deps.clock();
      for (const { envelope, seq } of envelopes) {
        await this.deps.feed.append(envelope, now);
        const body = JSON.stringify(envelope);
        for (const endpoint of endpoints) {
          if (!subscribes(endpoint.events, envelope.type)) continue;
          const doc = this.delivery(envelope, endpoint.id, body, seq, now);
          // Sent by this process at once, unless an earlier delivery of the resource is on its way.
          const reservation = (await this.deps.deliveries.holdsBack(doc))
            ? null
            : this.deps.dispatcher.reserve(doc.webhookId, doc.resource);
          if (reservation) Object.assign(doc, { lease: reservation.lease, nextAttemptAt: reservation.leaseUntil });
          if (!(await this.deps.deliveries.enqueue(doc))) {
            if (reservation) this.deps.dispatcher.cancel(reservation);
          } else if (reservation) reserved.push({ doc, reservation });
          else queued.add(doc.webhookId);
        }
      }
    };
    await before;
    const committing = this.deps.units.run(record);
    // Awaited by `handle` right after; a rejection must not count as unhandled before then.
    committing.catch(() => undefined);
    return { committing };
  }

  private delivery(envelope: EventEnvelope, webhookId: string, body: string, seq: string, now: Date): DeliveryDoc {
    const at = now.toISOString();
    return {
      id: deliveryId(webhookId, envelope.id),
      accountId: envelope.accountId,
      webhookId,
      eventId: envelope.id,
      eventType: envelope.type,
      resource: resourceOf(envelope),
      seq,
      body,
      state: 'pending',
      attempts: 0,
      nextAttemptAt: at,
      createdAt: at,
    };
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
