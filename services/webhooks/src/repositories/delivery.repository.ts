import type { DeliveryListQuery, DeliveryState } from '@estate/contracts/webhooks';
import { decodeCursor } from '@estate/platform/pagination';
import {
  DuplicateKeyError,
  keyset,
  pageOf,
  type DocumentCollection,
  type DocumentStore,
  type Update,
} from '@estate/store';

export const DELIVERIES_COLLECTION = 'webhook_deliveries';

/**
 * One event to one endpoint: a durable job. `nextAttemptAt` is both the schedule and the lease: a
 * process claims a due delivery by moving it into the future with its own `lease` token, so another
 * process takes it only if the claimer dies and the lease runs out.
 */
export interface DeliveryDoc {
  id: string;
  accountId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** The resource the event is about (`listing:<id>`), to keep its deliveries to one endpoint in order. */
  resource?: string;
  /**
   * Orders the deliveries of one resource to one endpoint: the resource's version the event is about,
   * then its place in its domain event (see `deliverySeq`). Deliveries without one (test events, and
   * those queued before it was kept) never hold another back.
   */
  seq?: string;
  /** The envelope exactly as sent (the signature covers these bytes). */
  body: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt?: string;
  lease?: string;
  lastStatusCode?: number;
  lastError?: string;
  lastResponseTimeMs?: number;
  lastAttemptAt?: string;
  createdAt: string;
}

const ORDER = { field: 'createdAt', direction: -1 } as const;
/** Earlier pending deliveries of one resource to one endpoint looked at, at most (more only behind a failing receiver). */
const HOLDERS_READ = 20;
/** A pending delivery with fewer failed attempts than this holds back the later ones of its resource. */
const HOLDING_ATTEMPTS = 2;

export const deliveryId = (webhookId: string, eventId: string): string => `${webhookId}.${eventId}`;

export class DeliveryRepository {
  private constructor(readonly collection: DocumentCollection<DeliveryDoc>) {}

  static async open(store: DocumentStore): Promise<DeliveryRepository> {
    return new DeliveryRepository(
      await store.collection<DeliveryDoc>(DELIVERIES_COLLECTION, [
        { fields: { state: 1, nextAttemptAt: 1 } },
        { fields: { webhookId: 1, createdAt: -1 } },
        // The earlier deliveries of one resource to one endpoint still to be sent (see `holdsBack`).
        { fields: { webhookId: 1, resource: 1, state: 1, seq: 1 } },
      ]),
    );
  }

  /** Queues a delivery; false when it is queued already (an event seen twice). */
  async enqueue(doc: DeliveryDoc): Promise<boolean> {
    try {
      await this.collection.insertOne(doc);
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Pending deliveries due by `now`, oldest first, leaving out endpoints that have no free slot. */
  due(now: string, busyWebhookIds: string[], limit: number): Promise<DeliveryDoc[]> {
    return this.collection.find(
      {
        state: 'pending',
        nextAttemptAt: { $lte: now },
        ...(busyWebhookIds.length > 0 ? { webhookId: { $nin: busyWebhookIds } } : {}),
      },
      { sort: { nextAttemptAt: 1 }, limit },
    );
  }

  /**
   * Whether an earlier delivery of the same resource to the same endpoint is still to be sent: being
   * attempted now (it holds a lease), not attempted yet, or waiting for its first retry (a blip at the
   * receiver keeps the order). One that failed more often no longer holds later ones back: a receiver
   * failing on one event must not stall the resource's later events for hours.
   */
  async holdsBack(doc: Pick<DeliveryDoc, 'webhookId' | 'resource' | 'seq' | 'id'>): Promise<boolean> {
    if (!doc.resource || !doc.seq) return false;
    // The index finds the earlier pending ones (usually none); which of them hold back is read here.
    const earlier = await this.collection.find(
      { webhookId: doc.webhookId, resource: doc.resource, state: 'pending', seq: { $lt: doc.seq } },
      { limit: HOLDERS_READ },
    );
    return earlier.some((d) => d.attempts < HOLDING_ATTEMPTS || d.lease !== undefined);
  }

  /** Takes a due delivery for this process: null when another process took it first. */
  claim(doc: DeliveryDoc, lease: string, leaseUntil: string): Promise<DeliveryDoc | null> {
    return this.collection.updateOne(
      { id: doc.id, state: 'pending', nextAttemptAt: doc.nextAttemptAt },
      { $set: { nextAttemptAt: leaseUntil, lease } },
    );
  }

  /** Records an attempt, if this process still holds the delivery. */
  finish(id: string, lease: string, update: Update): Promise<DeliveryDoc | null> {
    return this.collection.updateOne({ id, lease }, update);
  }

  get(accountId: string, webhookId: string, id: string): Promise<DeliveryDoc | null> {
    return this.collection.findOne({ id, accountId, webhookId });
  }

  async list(
    accountId: string,
    webhookId: string,
    query: DeliveryListQuery,
  ): Promise<{ items: DeliveryDoc[]; nextCursor: string | null; total: number }> {
    const { sort, after } = keyset(ORDER, decodeCursor(query.cursor, accountId));
    const scope = { accountId, webhookId, ...(query.state ? { state: { $in: query.state } } : {}) };
    const filter = after ? { $and: [scope, after] } : scope;
    const [fetched, total] = await Promise.all([
      this.collection.find(filter, { sort, limit: query.limit + 1 }),
      this.collection.count(scope),
    ]);
    return { ...pageOf(fetched, query.limit, ORDER, accountId), total };
  }

  /** Makes a delivery due now again (a manual retry), whatever its state. */
  requeue(accountId: string, webhookId: string, id: string, now: string): Promise<DeliveryDoc | null> {
    return this.collection.updateOne(
      { id, accountId, webhookId },
      { $set: { state: 'pending', nextAttemptAt: now }, $unset: { lease: true } },
    );
  }

  removeForWebhook(webhookId: string): Promise<number> {
    return this.collection.deleteMany({ webhookId });
  }

  /** Drops finished deliveries created before `before` (the log is kept as long as the feed). */
  purge(before: string): Promise<number> {
    return this.collection.deleteMany({ state: { $in: ['succeeded', 'failed'] }, createdAt: { $lt: before } });
  }
}
