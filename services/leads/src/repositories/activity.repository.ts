import type { Activity } from '@estate/contracts/leads';
import {
  findOwned,
  DuplicateKeyError,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  storable,
} from '@estate/store';

/** An activity as stored: the timeline entry plus its account; optional fields are absent rather than null. */
type ActivityDoc = Omit<Activity, 'customType' | 'summary' | 'data' | 'listingId'> & {
  accountId: string;
  customType?: string;
  summary?: string;
  data?: Record<string, unknown>;
  listingId?: string;
};

export const ACTIVITIES_COLLECTION = 'lead_activities';

function toActivity(doc: ActivityDoc): Activity {
  return {
    id: doc.id,
    leadId: doc.leadId,
    type: doc.type,
    customType: doc.customType ?? null,
    occurredAt: doc.occurredAt,
    summary: doc.summary ?? null,
    data: doc.data ?? null,
    listingId: doc.listingId ?? null,
    actor: doc.actor,
    recordedAt: doc.recordedAt,
  };
}

/**
 * The timeline: a projection of the activities recorded on leads. A lead write carries its new
 * activities in its outbox; they land here from the request that made them and, should that
 * process die first, from the `leads.activity.recorded` event. Inserting twice is harmless.
 */
/** Activity ids this process knows are stored; activities are never deleted, so the memory stays true. */
const REMEMBERED = 20_000;

export class ActivityRepository {
  private readonly stored = new Set<string>();

  private constructor(private readonly collection: DocumentCollection<ActivityDoc>) {}

  static async open(store: DocumentStore): Promise<ActivityRepository> {
    const col = await store.collection<ActivityDoc>(ACTIVITIES_COLLECTION, [
      { fields: { leadId: 1 } },
      { fields: { accountId: 1, leadId: 1, occurredAt: -1 } },
    ]);
    return new ActivityRepository(col);
  }

  /** Stores the activity unless it is there already (same id); true when this call stored it. */
  async insertIfAbsent(accountId: string, activity: Activity): Promise<boolean> {
    try {
      await this.collection.insertOne(storable({ ...activity, accountId }) as ActivityDoc);
      this.remember(accountId, activity.id);
      return true;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      this.remember(accountId, activity.id);
      return false;
    }
  }

  /** Whether the activity is stored; the ones this process wrote (the usual case for its own events) are answered from memory. */
  async exists(accountId: string, id: string): Promise<boolean> {
    if (this.stored.has(`${accountId}/${id}`)) return true;
    const found = (await findOwned(this.collection, id, accountId)) !== null;
    if (found) this.remember(accountId, id);
    return found;
  }

  private remember(accountId: string, id: string): void {
    if (this.stored.size >= REMEMBERED) this.stored.delete(this.stored.values().next().value as string);
    this.stored.add(`${accountId}/${id}`);
  }

  async find(filter: Filter, options: FindOptions): Promise<Activity[]> {
    return (await this.collection.find(filter, options)).map(toActivity);
  }

  async count(filter: Filter): Promise<number> {
    return this.collection.count(filter);
  }
}
