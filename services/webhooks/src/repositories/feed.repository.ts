import type { EventEnvelope } from '@estate/contracts/webhooks';
import { DuplicateKeyError, type DocumentCollection, type DocumentStore } from '@estate/store';

export const FEED_COLLECTION = 'feed_events';
const COUNTERS_COLLECTION = 'feed_counters';

/** One event of an account's change feed. `seq` orders the account's feed; gaps are harmless. */
export interface FeedDoc extends EventEnvelope {
  seq: number;
  /** When the sequence number was taken: readers see an event only once every earlier number has settled. */
  recordedAt: string;
}

interface CounterDoc {
  id: string;
  seq: number;
}

export class FeedRepository {
  private constructor(
    readonly collection: DocumentCollection<FeedDoc>,
    private readonly counters: DocumentCollection<CounterDoc>,
  ) {}

  static async open(store: DocumentStore): Promise<FeedRepository> {
    return new FeedRepository(
      await store.collection<FeedDoc>(FEED_COLLECTION, [
        { fields: { accountId: 1, seq: 1 }, unique: true },
        { fields: { recordedAt: 1 } },
      ]),
      await store.collection<CounterDoc>(COUNTERS_COLLECTION),
    );
  }

  has(id: string): Promise<boolean> {
    return this.collection.findOne({ id }).then((d) => d !== null);
  }

  /** Appends the event to its account's feed; false when it is there already (an event seen twice). */
  async append(event: EventEnvelope, recordedAt: string): Promise<boolean> {
    if (await this.has(event.id)) return false;
    const seq = await this.nextSeq(event.accountId);
    try {
      await this.collection.insertOne({ ...event, seq, recordedAt });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Events after `afterSeq` whose number was taken before `settledBefore`, oldest first. */
  read(
    accountId: string,
    afterSeq: number,
    options: { types?: string[]; limit: number; settledBefore: string },
  ): Promise<FeedDoc[]> {
    return this.collection.find(
      {
        accountId,
        seq: { $gt: afterSeq },
        recordedAt: { $lte: options.settledBefore },
        ...(options.types ? { type: { $in: options.types } } : {}),
      },
      { sort: { seq: 1 }, limit: options.limit },
    );
  }

  /** Drops events recorded before `before` (the 30-day window). */
  purge(before: string): Promise<number> {
    return this.collection.deleteMany({ recordedAt: { $lt: before } });
  }

  /** The account's next sequence number, from one atomic increment (shared by every replica). */
  private async nextSeq(accountId: string): Promise<number> {
    for (;;) {
      const bumped = await this.counters.updateOne({ id: accountId }, { $inc: { seq: 1 } });
      if (bumped) return bumped.seq;
      try {
        await this.counters.insertOne({ id: accountId, seq: 1 });
        return 1;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
  }
}
