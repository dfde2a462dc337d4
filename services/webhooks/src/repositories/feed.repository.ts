import type { EventEnvelope } from '@estate/contracts/webhooks';
import { DuplicateKeyError, type DocumentCollection, type DocumentStore } from '@estate/store';
import { SequenceClock } from '../sequence.rules';

export { positionAt } from '../sequence.rules';

export const FEED_COLLECTION = 'feed_events';

/** One event of an account's change feed, at its position in the feed. */
export interface FeedDoc extends EventEnvelope {
  /** Orders the feed: the time it was recorded (ms), a per-process counter, the process's tag. */
  pos: string;
  recordedAt: string;
}

export class FeedRepository {
  /** Positions taken by this process: strictly increasing, and unique across processes by the tag. */
  private readonly positions = new SequenceClock();

  private constructor(readonly collection: DocumentCollection<FeedDoc>) {}

  static async open(store: DocumentStore): Promise<FeedRepository> {
    return new FeedRepository(
      await store.collection<FeedDoc>(FEED_COLLECTION, [
        { fields: { accountId: 1, pos: 1 }, unique: true },
        { fields: { recordedAt: 1 } },
      ]),
    );
  }

  /** Appends the event to its account's feed; false when it is there already (an event seen twice: same id). */
  async append(event: EventEnvelope, now: Date): Promise<boolean> {
    try {
      await this.collection.insertOne({ ...event, pos: this.positions.next(now), recordedAt: now.toISOString() });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Events after position `after` and before `settledBefore`, oldest first. */
  read(
    accountId: string,
    after: string,
    options: { types?: string[]; limit: number; settledBefore: string },
  ): Promise<FeedDoc[]> {
    return this.collection.find(
      {
        accountId,
        pos: { $gt: after, $lt: options.settledBefore },
        ...(options.types ? { type: { $in: options.types } } : {}),
      },
      { sort: { pos: 1 }, limit: options.limit },
    );
  }

  /** Drops events recorded before `before` (the 30-day window). */
  purge(before: string): Promise<number> {
    return this.collection.deleteMany({ recordedAt: { $lt: before } });
  }
}
