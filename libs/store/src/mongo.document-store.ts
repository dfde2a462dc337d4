import mongoose from 'mongoose';
import type { Logger } from 'pino';
import {
  DuplicateKeyError,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type ReadOptions,
  type StoredDoc,
  type Update,
} from './document-store';
import { fromEngineDoc, toEngineFilter, toEngineProjection, toEngineSort } from './id-mapping';
import { isDuplicateKey, isUnavailable } from './mongo-errors';
import { DependencyUnavailable } from '@estate/platform/errors';
import { idSetLookups, lookUpEach } from './id-set-lookups';
import { allOf } from './filters';
import { capabilitiesOf, conditionalPulls, type EngineCapabilities } from './mongo-capabilities';
import { getPath, pullMatches } from './pull-matcher';

export { isDuplicateKey } from './mongo-errors';
export type { EngineCapabilities } from './mongo-capabilities';

type Raw = Record<string, unknown>;
type NativeCollection = mongoose.mongo.Collection<Raw>;

export interface MongoStoreOptions {
  log?: Logger;
  /** Database name; defaults to the one in the URL. */
  dbName?: string;
  /** Overrides what `buildInfo` says about the server (tests run the FerretDB path on MongoDB). */
  capabilities?: Partial<EngineCapabilities>;
  /** How long an operation waits for a server before failing (the caller answers 503). */
  serverSelectionTimeoutMS?: number;
}

/** How often a compare-and-set `$pull` is retried when the array keeps changing under it. */
const PULL_ATTEMPTS = 50;

/** The port's errors for what the server said: a duplicate key, or no server to talk to (the request answers 503). */
function mapMongoError(err: unknown, collection: string): unknown {
  if (err instanceof DuplicateKeyError || err instanceof DependencyUnavailable) return err;
  if (isDuplicateKey(err)) return new DuplicateKeyError(collection, err);
  if (isUnavailable(err)) return new DependencyUnavailable('store', err);
  return err;
}

/** Drops operators with nothing in them (`{ $set: {} }`), which servers reject or treat differently. */
function cleanUpdate(update: Update): Raw {
  const out: Raw = {};
  for (const [op, fields] of Object.entries(update)) {
    if (fields && typeof fields === 'object' && Object.keys(fields).length > 0) out[op] = fields;
  }
  return out;
}

class MongoCollection<T extends StoredDoc> implements DocumentCollection<T> {
  constructor(
    private readonly name: string,
    private readonly col: NativeCollection,
    private readonly db: mongoose.mongo.Db,
    private readonly capabilities: EngineCapabilities,
  ) {}

  async insertOne(doc: T): Promise<T> {
    const { id, ...rest } = doc;
    try {
      await this.col.insertOne({ ...rest, _id: id } as Raw);
    } catch (err) {
      throw this.mapError(err);
    }
    return doc;
  }

  async findOne(filter: Filter, options?: ReadOptions): Promise<T | null> {
    const projection = toEngineProjection(options);
    return this.run(async () =>
      fromEngineDoc<T>(await this.col.findOne(toEngineFilter(filter), projection ? { projection } : {})),
    );
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return this.run(async () => {
      const projection = toEngineProjection(options);
      const engineFilter = toEngineFilter(filter);
      const each = this.capabilities.idSetLookup ? null : idSetLookups(engineFilter, options);
      if (each) {
        const docs = await lookUpEach(each, (one) => this.col.findOne(one, projection ? { projection } : {}));
        return docs.slice(0, options.limit ?? docs.length).map((d) => fromEngineDoc<T>(d) as T);
      }
      let cursor = this.col.find(engineFilter, projection ? { projection } : {});
      if (options.sort) cursor = cursor.sort(toEngineSort(options.sort));
      if (options.skip) cursor = cursor.skip(options.skip);
      if (options.limit !== undefined) cursor = cursor.limit(options.limit);
      const docs = await cursor.toArray();
      return docs.map((d) => fromEngineDoc<T>(d) as T);
    });
  }

  async count(filter: Filter): Promise<number> {
    // The plain `count` command: FerretDB's aggregation (behind countDocuments) is thin.
    return this.run(async () => {
      const res = await this.db.command({ count: this.name, query: toEngineFilter(filter) });
      return Number(res.n);
    });
  }

  async updateOne(filter: Filter, update: Update): Promise<T | null> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (Object.keys(engineUpdate).length === 0) return fromEngineDoc<T>(await this.col.findOne(engineFilter));
      if (!this.capabilities.conditionalPull && conditionalPulls(engineUpdate).length > 0)
        return fromEngineDoc<T>(await this.pullByCompareAndSet(engineFilter, engineUpdate));
      // One server command: the filter (a version guard, say) and the change apply atomically.
      return fromEngineDoc<T>(await this.col.findOneAndUpdate(engineFilter, engineUpdate, { returnDocument: 'after' }));
    } catch (err) {
      throw this.mapError(err);
    }
  }

  /**
   * A conditional `$pull` on a server without it: read the document, compute the arrays kept, and write them
   * guarded by the arrays read (and the filter), so a concurrent change makes the write miss and start again.
   */
  private async pullByCompareAndSet(filter: Filter, update: Raw): Promise<Raw | null> {
    for (let attempt = 0; attempt < PULL_ATTEMPTS; attempt++) {
      const current = await this.col.findOne(filter);
      if (!current) return null;
      const pull = { ...(update.$pull as Raw) };
      const set: Raw = { ...((update.$set as Raw | undefined) ?? {}) };
      const guard: Raw[] = [filter, { _id: current._id }];
      for (const [path, cond] of conditionalPulls(update)) {
        delete pull[path];
        const arr = getPath(current, path);
        guard.push({ [path]: arr === undefined ? { $exists: false } : arr });
        if (!Array.isArray(arr)) continue; // missing or not an array: nothing to pull, as on MongoDB
        const kept = arr.filter((e) => !pullMatches(e, cond as Raw));
        if (kept.length !== arr.length) set[path] = kept;
      }
      const rewritten: Raw = { ...update };
      if (Object.keys(pull).length > 0) rewritten.$pull = pull;
      else delete rewritten.$pull;
      if (Object.keys(set).length > 0) rewritten.$set = set;
      else delete rewritten.$set;
      if (Object.keys(rewritten).length === 0) return current;
      const saved = await this.col.findOneAndUpdate(allOf(guard), rewritten, { returnDocument: 'after' });
      if (saved) return saved;
    }
    throw new Error(`${this.name}: the document kept changing during a $pull; gave up after ${PULL_ATTEMPTS} attempts`);
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (Object.keys(engineUpdate).length === 0) return await this.count(filter);
      if (!this.capabilities.conditionalPull && conditionalPulls(engineUpdate).length > 0) {
        const ids = (await this.col.find(engineFilter, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
        let n = 0;
        for (const _id of ids) if (await this.pullByCompareAndSet({ ...engineFilter, _id }, engineUpdate)) n++;
        return n;
      }
      // Matched rather than modified: the port counts every matched document.
      return (await this.col.updateMany(engineFilter, engineUpdate)).matchedCount;
    } catch (err) {
      throw this.mapError(err);
    }
  }

  async deleteOne(filter: Filter): Promise<boolean> {
    return this.run(async () => (await this.col.deleteOne(toEngineFilter(filter))).deletedCount > 0);
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.run(async () => (await this.col.deleteMany(toEngineFilter(filter))).deletedCount);
  }

  private async run<R>(fn: () => Promise<R>): Promise<R> {
    try {
      return await fn();
    } catch (err) {
      throw this.mapError(err);
    }
  }

  private mapError(err: unknown): unknown {
    return mapMongoError(err, this.name);
  }
}

/**
 * Distributed adapter: MongoDB wire protocol through mongoose's connection (MongoDB, or
 * FerretDB v1 in development). Documents are stored with `_id = id`.
 * We use the native driver collections, not mongoose models: the domain schemas are the zod contracts, not duplicated as mongoose schemas.
 */
export class MongoDocumentStore implements DocumentStore {
  readonly kind = 'mongo' as const;
  private readonly prepared = new Map<string, Promise<NativeCollection>>();

  private constructor(
    private readonly connection: mongoose.Connection,
    private readonly db: mongoose.mongo.Db,
    readonly capabilities: EngineCapabilities,
  ) {}

  static async connect(url: string, opts: MongoStoreOptions = {}): Promise<MongoDocumentStore> {
    const connection = mongoose.createConnection(url, {
      dbName: opts.dbName,
      // An operation with no server to go to fails within this, and the request answers 503 quickly.
      serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 1000,
      connectTimeoutMS: 2000,
      socketTimeoutMS: 30_000,
      maxPoolSize: 20,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
    });
    // Without a listener an 'error' event would throw; failures surface through the operations.
    connection.on('error', (err: unknown) =>
      opts.log?.warn({ reason: err instanceof Error ? err.message : String(err) }, 'store connection error'),
    );
    try {
      await connection.asPromise();
      const db = connection.db;
      if (!db) throw new Error('mongo connection has no database');
      const info = await db.admin().command({ buildInfo: 1 });
      const capabilities = { ...capabilitiesOf(info), ...opts.capabilities };
      opts.log?.debug(
        { db: db.databaseName, ferretdb: info.ferretdbVersion, capabilities },
        'document store connected',
      );
      return new MongoDocumentStore(connection, db, capabilities);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  async collection<T extends StoredDoc>(name: string, indexes: IndexSpec[] = []): Promise<DocumentCollection<T>> {
    let prepared = this.prepared.get(name);
    if (!prepared) {
      prepared = this.prepare(name, indexes);
      this.prepared.set(name, prepared);
      prepared.catch(() => this.prepared.delete(name));
    }
    try {
      return new MongoCollection<T>(name, await prepared, this.db, this.capabilities);
    } catch (err) {
      throw mapMongoError(err, name);
    }
  }

  private async prepare(name: string, indexes: IndexSpec[]): Promise<NativeCollection> {
    const col = this.db.collection<Raw>(name);
    for (const index of indexes) {
      const keys = Object.fromEntries(Object.entries(index.fields).map(([f, dir]) => [f === 'id' ? '_id' : f, dir]));
      if (Object.keys(keys).length === 1 && '_id' in keys) continue; // the primary key is indexed already
      const options: mongoose.mongo.CreateIndexesOptions = {};
      if (index.unique) options.unique = true;
      if (index.sparse) options.sparse = true;
      await col.createIndex(keys, options);
    }
    return col;
  }

  async ping(): Promise<void> {
    try {
      await this.db.admin().ping();
    } catch (err) {
      throw mapMongoError(err, 'admin');
    }
  }

  async close(): Promise<void> {
    this.prepared.clear();
    await this.connection.close();
  }

  /** Drops the whole database (tests). */
  async dropDatabase(): Promise<void> {
    await this.db.dropDatabase();
  }
}
