import type { Role } from '@estate/contracts/accounts';
import type { FeedBudget, FeedCursor, FeedRemovals, FeedSchedule } from '@estate/contracts/feeds';
import { decodeCursor } from '@estate/platform/pagination';
import { allOf, keyset, pageOf, type DocumentCollection, type DocumentStore, type Update } from '@estate/store';

export const FEEDS_COLLECTION = 'feeds';

/** A feed as stored: its secret (token or client secret) sealed, never in clear. */
export interface FeedDoc {
  id: string;
  accountId: string;
  name: string;
  serviceRoot: string;
  resource: 'Property';
  auth:
    | { type: 'bearer'; secretSealed: string }
    | { type: 'client_credentials'; tokenUrl: string; clientId: string; scope?: string; secretSealed: string };
  originatingSystemName: string;
  filter?: string;
  budget: FeedBudget;
  pageSize: number;
  /** Absent on feeds stored before removals: the defaults (DEFAULT_REMOVALS). */
  removals?: FeedRemovals;
  /** Sync the records' photos. */
  media?: boolean;
  schedule?: FeedSchedule;
  /** When the schedule starts the next run (moved by the replica that starts it: one per due time). */
  nextRunAt?: string;
  enabled: boolean;
  /** When a complete key pull last reconciled the feed's listings. */
  reconciledAt?: string;
  /** Where the next run starts (committed with each page a run applies). */
  cursor?: FeedCursor;
  /**
   * Following the source's EntityEvent: the last `EntityEventSequence` taken into account and where the run before
   * started (`previous`: each run reads the events of the run before again, for sources whose reads lag their event
   * log), or when the source last answered that it has none (asked again a day later). Neither: not asked yet.
   */
  entityEvents?: { sequence: number; previous?: number } | { absentAt: string };
  lastRunId?: string;
  /** The run in progress: one at a time per feed. */
  activeRunId?: string;
  /** Requests made to the source per minute (epoch minute), the last hour's: the hourly budget counts them. */
  usage?: Array<{ minute: number; count: number }>;
  /** Runs write as the key that created the feed. */
  createdBy: { keyId: string; role: Role | 'platform' };
  version: number;
  createdAt: string;
  updatedAt: string;
}

const ORDER = { field: 'createdAt', direction: 1 } as const;

export class FeedRepository {
  private constructor(readonly collection: DocumentCollection<FeedDoc>) {}

  static async open(store: DocumentStore): Promise<FeedRepository> {
    return new FeedRepository(
      await store.collection<FeedDoc>(FEEDS_COLLECTION, [
        { fields: { accountId: 1, createdAt: 1 } },
        { fields: { nextRunAt: 1 } },
      ]),
    );
  }

  insert(doc: FeedDoc): Promise<FeedDoc> {
    return this.collection.insertOne(doc);
  }

  get(accountId: string, id: string): Promise<FeedDoc | null> {
    return this.collection.findOne({ id, accountId });
  }

  load(id: string): Promise<FeedDoc | null> {
    return this.collection.findOne({ id });
  }

  async list(
    accountId: string,
    query: { limit: number; cursor?: string },
  ): Promise<{ items: FeedDoc[]; nextCursor: string | null; total: number }> {
    const { sort, after } = keyset(ORDER, decodeCursor(query.cursor, accountId));
    const filter = allOf([{ accountId }, after]);
    const [fetched, total] = await Promise.all([
      this.collection.find(filter, { sort, limit: query.limit + 1 }),
      this.collection.count({ accountId }),
    ]);
    return { ...pageOf(fetched, query.limit, ORDER, accountId), total };
  }

  /** Writes if the feed is still at `version`; null when another writer won or it is gone. */
  updateAt(accountId: string, id: string, version: number, update: Update): Promise<FeedDoc | null> {
    return this.collection.updateOne({ id, accountId, version }, { ...update, $inc: { ...update.$inc, version: 1 } });
  }

  /** Removes the feed unless a run of it is in progress. */
  remove(accountId: string, id: string): Promise<boolean> {
    return this.collection.deleteOne({ id, accountId, activeRunId: { $exists: false } });
  }

  /**
   * Makes `runId` the feed's run in progress; null when another run holds it. `replacing`: a run that has ended
   * without releasing the feed, taken over only if it is still the one recorded.
   */
  takeRun(accountId: string, id: string, runId: string, replacing?: string): Promise<FeedDoc | null> {
    return this.collection.updateOne(
      { id, accountId, activeRunId: replacing ?? { $exists: false } },
      { $set: { activeRunId: runId, lastRunId: runId } },
    );
  }

  /** Enabled feeds whose scheduled run is due and that have no run in progress. */
  due(now: Date, limit: number): Promise<FeedDoc[]> {
    return this.collection.find(
      { enabled: true, nextRunAt: { $lte: now.toISOString() }, activeRunId: { $exists: false } },
      { sort: { nextRunAt: 1 }, limit },
    );
  }

  /** Moves a due feed's next run time if it is still `dueAt`: the replica that moves it starts the run. */
  async claimSchedule(id: string, dueAt: string, next: string): Promise<boolean> {
    return (await this.collection.updateOne({ id, nextRunAt: dueAt }, { $set: { nextRunAt: next } })) !== null;
  }

  async releaseRun(id: string, runId: string): Promise<void> {
    await this.collection.updateOne({ id, activeRunId: runId }, { $unset: { activeRunId: true } });
  }

  /** Commits the run's position and the source requests it made (only the run in progress may). */
  async commit(
    id: string,
    runId: string,
    change: {
      cursor?: FeedCursor;
      usage?: Array<{ minute: number; count: number }>;
      reconciledAt?: string;
      entityEvents?: FeedDoc['entityEvents'];
    },
  ): Promise<boolean> {
    const saved = await this.collection.updateOne(
      { id, activeRunId: runId },
      {
        $set: {
          ...(change.usage ? { usage: change.usage } : {}),
          ...(change.cursor ? { cursor: change.cursor } : {}),
          ...(change.reconciledAt ? { reconciledAt: change.reconciledAt } : {}),
          ...(change.entityEvents ? { entityEvents: change.entityEvents } : {}),
        },
      },
    );
    return saved !== null;
  }
}
