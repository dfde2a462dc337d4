import mongoose from 'mongoose';
import type {
  DocumentCollection,
  DocumentStore,
  Filter,
  FindOptions,
  IndexSpec,
  StoredDoc,
  Update,
} from '@estate/store';
import { toEngineFilter, toEngineSort } from '@estate/store/id-mapping';
import { idSetLookups } from '@estate/store/id-set-lookups';
import { capabilitiesOf } from '@estate/store/mongo-capabilities';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import type { Logger } from 'pino';

/** One query a repository sent, as the port saw it. */
export interface RecordedQuery {
  collection: string;
  op: string;
  filter: Filter;
  options?: FindOptions;
}

/**
 * A document store that passes everything through and records each filter the repositories send,
 * so a test can ask the engine how it would answer them ({@link collectionScans}).
 */
export class QueryRecordingStore implements DocumentStore {
  readonly queries: RecordedQuery[] = [];

  constructor(private readonly inner: DocumentStore) {}

  get kind() {
    return this.inner.kind;
  }

  async collection<T extends StoredDoc>(name: string, indexes?: IndexSpec[]): Promise<DocumentCollection<T>> {
    const col = await this.inner.collection<T>(name, indexes);
    const record = (op: string, filter: Filter, options?: FindOptions) =>
      this.queries.push({ collection: name, op, filter, options });
    return {
      insertOne: (doc: T) => col.insertOne(doc),
      findOne: (filter: Filter) => (record('findOne', filter), col.findOne(filter)),
      find: (filter: Filter, options?: FindOptions) => (record('find', filter, options), col.find(filter, options)),
      count: (filter: Filter) => (record('count', filter), col.count(filter)),
      updateOne: (filter: Filter, update: Update) => (record('updateOne', filter), col.updateOne(filter, update)),
      updateMany: (filter: Filter, update: Update) => (record('updateMany', filter), col.updateMany(filter, update)),
      deleteOne: (filter: Filter) => (record('deleteOne', filter), col.deleteOne(filter)),
      deleteMany: (filter: Filter) => (record('deleteMany', filter), col.deleteMany(filter)),
    };
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Forgets what was recorded (after seeding data, say). */
  clear(): void {
    this.queries.length = 0;
  }
}

type Plan = Record<string, unknown>;

/**
 * Every step of an `explain` plan tree: MongoDB's `stage`s, and the `Node Type`s of the PostgreSQL plan that
 * FerretDB reports for a filter it pushed down.
 */
export function planSteps(plan: unknown, out: string[] = []): string[] {
  if (Array.isArray(plan)) plan.forEach((p) => planSteps(p, out));
  else if (plan && typeof plan === 'object') {
    for (const [k, v] of Object.entries(plan as Plan)) {
      if ((k === 'stage' || k === 'Node Type') && typeof v === 'string') out.push(v);
      else planSteps(v, out);
    }
  }
  return out;
}

/**
 * Asks the engine how it would answer each recorded query, as the adapter sends it (a set of ids may go as one
 * lookup per id, see `idSetLookups`), and describes the ones that read the whole collection: on MongoDB a `COLLSCAN`
 * stage; on FerretDB a filter it does not push down to its backend (it would then fetch every document and filter
 * in its own process).
 */
export async function collectionScans(url: string, dbName: string, queries: RecordedQuery[]): Promise<string[]> {
  const client = await mongoose.mongo.MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  try {
    const db = client.db(dbName);
    const capabilities = capabilitiesOf(await db.admin().command({ buildInfo: 1 }));
    const scans: string[] = [];
    const seen = new Set<string>();
    for (const q of queries) {
      const engineFilter = toEngineFilter(q.filter);
      const sent =
        q.op === 'find' && !capabilities.idSetLookup
          ? (idSetLookups(engineFilter, q.options ?? {}) ?? [engineFilter])
          : [engineFilter];
      for (const filter of sent) {
        const key = JSON.stringify([q.collection, filter, q.options?.sort]);
        if (seen.has(key)) continue;
        seen.add(key);
        let cursor = db.collection(q.collection).find(filter);
        if (q.options?.sort) cursor = cursor.sort(toEngineSort(q.options.sort));
        if (q.options?.limit !== undefined) cursor = cursor.limit(q.options.limit);
        const plan = (await cursor.explain()) as Plan;
        const what = `${q.collection}.${q.op}(${JSON.stringify(q.filter)})`;
        if ('filterPushdown' in plan) {
          if (plan.filterPushdown !== true) scans.push(`${what}: FerretDB does not push the filter down`);
        } else if (planSteps(plan.queryPlanner).includes('COLLSCAN')) {
          scans.push(`${what}: COLLSCAN`);
        }
      }
    }
    return scans;
  } finally {
    await client.close();
  }
}

/** A recording store over a MongoDB database of its own; `drop()` removes the database and closes the store. */
export async function openRecordingStore(
  url: string,
  dbName: string,
  log?: Logger,
): Promise<{ store: QueryRecordingStore; drop(): Promise<void> }> {
  const mongo = await MongoDocumentStore.connect(url, { dbName, log });
  const store = new QueryRecordingStore(mongo);
  return {
    store,
    async drop() {
      await mongo.dropDatabase();
      await store.close();
    },
  };
}
