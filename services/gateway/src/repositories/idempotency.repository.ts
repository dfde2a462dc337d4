import { DuplicateKeyError, type DocumentCollection, type DocumentStore } from '@estate/store';

/** An answer kept for replay. */
export interface KeptAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface IdempotencyDoc {
  /** sha256 of key id, method, path and the client's Idempotency-Key. */
  id: string;
  state: 'running' | 'done';
  requestHash: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  createdAt: string;
  expiresAt: string;
}

/** Idempotency-Key records: the first request with a key, then its answer. */
export class IdempotencyRepository {
  private constructor(private readonly records: DocumentCollection<IdempotencyDoc>) {}

  static async open(store: DocumentStore): Promise<IdempotencyRepository> {
    return new IdempotencyRepository(
      await store.collection<IdempotencyDoc>('idempotency_keys', [{ fields: { expiresAt: 1 } }]),
    );
  }

  /** False when a record with this id exists already. */
  async insert(doc: IdempotencyDoc): Promise<boolean> {
    try {
      await this.records.insertOne(doc);
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  find(id: string): Promise<IdempotencyDoc | null> {
    return this.records.findOne({ id });
  }

  /** Puts a new first request in the place of an expired record. */
  async replace(doc: IdempotencyDoc): Promise<void> {
    await this.records.deleteOne({ id: doc.id });
    await this.records.insertOne(doc);
  }

  /** Takes over a running record left since `since`; false when another request took it first. */
  async takeOver(id: string, since: string, now: string): Promise<boolean> {
    return (
      (await this.records.updateOne({ id, state: 'running', createdAt: since }, { $set: { createdAt: now } })) !== null
    );
  }

  async complete(id: string, answer: KeptAnswer): Promise<void> {
    await this.records.updateOne(
      { id },
      { $set: { state: 'done', status: answer.status, headers: answer.headers, body: answer.body } },
    );
  }

  /** Forgets a first request that did not succeed, so the client can fix it and retry. */
  async release(id: string): Promise<void> {
    await this.records.deleteOne({ id, state: 'running' });
  }

  purgeExpired(now: string): Promise<number> {
    return this.records.deleteMany({ expiresAt: { $lt: now } });
  }
}
