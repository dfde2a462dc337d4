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
  /** EntityEventSequence: the event's place among the account's numbered events (decision 0106); set once. */
  seq?: number;
  /** `<accountId>:<seq>`, unique: two events never share a number. */
  seqKey?: string;
}

/** Events a numbering pass assigns at most, per call. */
export const NUMBERING_BATCH = 2_000;

export class FeedRepository {
  /** Positions taken by this process: strictly increasing, and unique across processes by the tag. */
  private readonly positions = new SequenceClock();

  private constructor(readonly collection: DocumentCollection<FeedDoc>) {}

  static async open(store: DocumentStore): Promise<FeedRepository> {
    return new FeedRepository(
      await store.collection<FeedDoc>(FEED_COLLECTION, [
        { fields: { accountId: 1, pos: 1 }, unique: true },
        { fields: { recordedAt: 1 } },
        { fields: { seqKey: 1 }, unique: true, sparse: true },
        { fields: { accountId: 1, seq: 1 } },
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

  /**
   * Numbers the account's settled events of `types` that have no number yet, in feed order, each the number after the
   * highest one the account has (the first ever: its recording time in ms x 1000, so that numbers keep growing even
   * after the 30-day sweep emptied an account's feed). Each number is written by a conditional update and is unique
   * (`seqKey`): numbering passes running at once never give two events one number, and a number is written only after
   * every lower one was, so a reader never steps past a number still to come. Returns how many it numbered.
   */
  async number(
    accountId: string,
    types: readonly string[],
    settledBefore: string,
    max = NUMBERING_BATCH,
  ): Promise<number> {
    let done = 0;
    pass: while (done < max) {
      const [last] = await this.collection.find({ accountId, seq: { $exists: true } }, { sort: { seq: -1 }, limit: 1 });
      const pending = await this.collection.find(
        {
          accountId,
          pos: { $gt: last?.pos ?? '', $lt: settledBefore },
          type: { $in: [...types] },
          seq: { $exists: false },
        },
        { sort: { pos: 1 }, limit: Math.min(500, max - done) },
      );
      if (pending.length === 0) return done;
      let next = last?.seq !== undefined ? last.seq + 1 : Date.parse(pending[0].recordedAt) * 1000;
      for (const doc of pending) {
        try {
          const saved = await this.collection.updateOne(
            { id: doc.id, seq: { $exists: false } },
            { $set: { seq: next, seqKey: `${accountId}:${next}` } },
          );
          // Numbered meanwhile by another pass: start again from the highest number.
          if (!saved) continue pass;
        } catch (err) {
          if (err instanceof DuplicateKeyError) continue pass;
          throw err;
        }
        next++;
        done++;
      }
    }
    return done;
  }

  /** Numbered events of the account matching `range` on their number, in number order. */
  numbered(
    accountId: string,
    range: Record<string, number>,
    options: { direction: 1 | -1; limit: number; skip?: number },
  ): Promise<FeedDoc[]> {
    return this.collection.find(
      { accountId, seq: { $exists: true, ...range } },
      { sort: { seq: options.direction }, limit: options.limit, ...(options.skip ? { skip: options.skip } : {}) },
    );
  }

  countNumbered(accountId: string, range: Record<string, number>): Promise<number> {
    return this.collection.count({ accountId, seq: { $exists: true, ...range } });
  }

  /** Drops events recorded before `before` (the 30-day window). */
  purge(before: string): Promise<number> {
    return this.collection.deleteMany({ recordedAt: { $lt: before } });
  }
}
