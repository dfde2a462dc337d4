import type { WebhookListQuery } from '@estate/contracts/webhooks';
import { decodeCursor } from '@estate/platform/pagination';
import { keyset, pageOf, type DocumentCollection, type DocumentStore, type Update } from '@estate/store';

export const ENDPOINTS_COLLECTION = 'webhook_endpoints';

/** A webhook endpoint as stored: the signing secret sealed, never in clear. */
export interface EndpointDoc {
  id: string;
  accountId: string;
  url: string;
  events: string[];
  description?: string;
  enabled: boolean;
  /** Set when the service disabled it (failing for days). */
  disabledReason?: string;
  /** First failed attempt since the last success. */
  failingSince?: string;
  secretSealed: string;
  secretPrefix: string;
  /** After a rotation, the replaced secret, which also signs deliveries until `previousSecretExpiresAt`. */
  previousSecretSealed?: string;
  previousSecretPrefix?: string;
  previousSecretExpiresAt?: string;
  /** Why the last attempt failed; gone once one succeeds. */
  lastError?: string;
  /** The last attempt was refused before connecting (a private target the server does not allow). */
  targetRefused?: boolean;
  version: number;
  createdAt: string;
  updatedAt: string;
}

const ORDER = { field: 'createdAt', direction: 1 } as const;

export class EndpointRepository {
  private constructor(readonly collection: DocumentCollection<EndpointDoc>) {}

  static async open(store: DocumentStore): Promise<EndpointRepository> {
    return new EndpointRepository(
      await store.collection<EndpointDoc>(ENDPOINTS_COLLECTION, [
        { fields: { accountId: 1, createdAt: 1 } },
        { fields: { accountId: 1, enabled: 1 } },
      ]),
    );
  }

  insert(doc: EndpointDoc): Promise<EndpointDoc> {
    return this.collection.insertOne(doc);
  }

  get(accountId: string, id: string): Promise<EndpointDoc | null> {
    return this.collection.findOne({ id, accountId });
  }

  count(accountId: string): Promise<number> {
    return this.collection.count({ accountId });
  }

  async list(
    accountId: string,
    query: WebhookListQuery,
  ): Promise<{ items: EndpointDoc[]; nextCursor: string | null; total: number }> {
    const { sort, after } = keyset(ORDER, decodeCursor(query.cursor, accountId));
    const filter = after ? { $and: [{ accountId }, after] } : { accountId };
    const [fetched, total] = await Promise.all([
      this.collection.find(filter, { sort, limit: query.limit + 1 }),
      this.collection.count({ accountId }),
    ]);
    return { ...pageOf(fetched, query.limit, ORDER, accountId), total };
  }

  /** The account's enabled endpoints (at most 20). */
  enabledOf(accountId: string): Promise<EndpointDoc[]> {
    return this.collection.find({ accountId, enabled: true });
  }

  /** Writes if the endpoint is still at `version`; null when another writer won or it is gone. */
  updateAt(accountId: string, id: string, version: number, update: Update): Promise<EndpointDoc | null> {
    return this.collection.updateOne({ id, accountId, version }, { ...update, $inc: { ...update.$inc, version: 1 } });
  }

  remove(accountId: string, id: string): Promise<boolean> {
    return this.collection.deleteOne({ id, accountId });
  }

  /**
   * Records a failed attempt and why: the first since the last success starts the failing period. The version
   * moves only when what the endpoint shows changes (not with every attempt failing the same way).
   */
  async markFailing(
    id: string,
    at: string,
    failure: { error: string; targetRefused: boolean },
  ): Promise<EndpointDoc | null> {
    const shown = { lastError: failure.error, targetRefused: failure.targetRefused };
    await this.collection.updateOne(
      { id, failingSince: { $exists: false } },
      { $set: { failingSince: at, updatedAt: at, ...shown }, $inc: { version: 1 } },
    );
    await this.collection.updateOne(
      {
        id,
        $or: [{ lastError: { $ne: failure.error } }, { targetRefused: { $ne: failure.targetRefused } }],
      },
      { $set: { updatedAt: at, ...shown }, $inc: { version: 1 } },
    );
    return this.collection.findOne({ id });
  }

  /** A success ends the failing period and clears the last error. */
  async markHealthy(id: string, at: string): Promise<void> {
    await this.collection.updateOne(
      { id, $or: [{ failingSince: { $exists: true } }, { lastError: { $exists: true } }] },
      {
        $unset: { failingSince: true, lastError: true, targetRefused: true },
        $set: { updatedAt: at },
        $inc: { version: 1 },
      },
    );
  }

  async disable(id: string, reason: string, at: string): Promise<void> {
    await this.collection.updateOne(
      { id, enabled: true },
      { $set: { enabled: false, disabledReason: reason, updatedAt: at }, $inc: { version: 1 } },
    );
  }
}
