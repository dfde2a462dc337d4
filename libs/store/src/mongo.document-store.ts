import mongoose from 'mongoose';
import type { Logger } from 'pino';
import {
  DuplicateKeyError,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type StoredDoc,
  type Update,
} from './document-store';
import { FerretDbWriteLease } from './ferretdb-write-lease';
import { fromEngineDoc, toEngineFilter, toEngineSort } from './id-mapping';
import { isDuplicateKey } from './mongo-errors';

export { LOCKS } from './ferretdb-write-lease';
export { isDuplicateKey } from './mongo-errors';

type Raw = Record<string, unknown>;
type NativeCollection = mongoose.mongo.Collection<Raw>;

/**
 * How single-document writes are made atomic.
 * - `native`: the server's own `findAndModify`/`update`/`delete` (MongoDB: atomic per document).
 * - `locked`: every write that depends on a filter first takes a short lease on the document
 *   ({@link FerretDbWriteLease}). Needed for FerretDB v1, whose updates are not atomic.
 * `auto` (default) picks `locked` when the server says it is FerretDB.
 */
export type WriteMode = 'native' | 'locked';

export interface MongoStoreOptions {
  log?: Logger;
  /** Database name; defaults to the one in the URL. */
  dbName?: string;
  writes?: WriteMode | 'auto';
  /** Lease on a document lock before another writer may take it over (locked mode). */
  lockLeaseMs?: number;
  /** How long a writer waits for a document lock before failing (locked mode). */
  lockWaitMs?: number;
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
    /** Present on FerretDB only: the real MongoDB path uses the server's atomic writes. */
    private readonly lease: FerretDbWriteLease | null,
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

  async findOne(filter: Filter): Promise<T | null> {
    return fromEngineDoc<T>(await this.col.findOne(toEngineFilter(filter)));
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.col.find(toEngineFilter(filter));
    if (options.sort) cursor = cursor.sort(toEngineSort(options.sort));
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit !== undefined) cursor = cursor.limit(options.limit);
    const docs = await cursor.toArray();
    return docs.map((d) => fromEngineDoc<T>(d) as T);
  }

  async count(filter: Filter): Promise<number> {
    // The plain `count` command: FerretDB's aggregation (behind countDocuments) is thin.
    const res = await this.db.command({ count: this.name, query: toEngineFilter(filter) });
    return Number(res.n);
  }

  async updateOne(filter: Filter, update: Update): Promise<T | null> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (this.lease)
        return fromEngineDoc<T>(await this.lease.updateOne(this.name, this.col, engineFilter, engineUpdate));
      if (Object.keys(engineUpdate).length === 0) return fromEngineDoc<T>(await this.col.findOne(engineFilter));
      return fromEngineDoc<T>(await this.col.findOneAndUpdate(engineFilter, engineUpdate, { returnDocument: 'after' }));
    } catch (err) {
      throw this.mapError(err);
    }
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (this.lease) return await this.lease.updateMany(this.name, this.col, engineFilter, engineUpdate);
      if (Object.keys(engineUpdate).length === 0) return await this.count(filter);
      // Matched rather than modified: the port counts every matched document.
      return (await this.col.updateMany(engineFilter, engineUpdate)).matchedCount;
    } catch (err) {
      throw this.mapError(err);
    }
  }

  async deleteOne(filter: Filter): Promise<boolean> {
    const engineFilter = toEngineFilter(filter);
    if (this.lease) return this.lease.deleteOne(this.name, this.col, engineFilter);
    return (await this.col.deleteOne(engineFilter)).deletedCount > 0;
  }

  async deleteMany(filter: Filter): Promise<number> {
    const engineFilter = toEngineFilter(filter);
    if (this.lease) return this.lease.deleteMany(this.name, this.col, engineFilter);
    return (await this.col.deleteMany(engineFilter)).deletedCount;
  }

  private mapError(err: unknown): unknown {
    return isDuplicateKey(err) ? new DuplicateKeyError(this.name, err) : err;
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
    private readonly lease: FerretDbWriteLease | null,
  ) {}

  static async connect(url: string, opts: MongoStoreOptions = {}): Promise<MongoDocumentStore> {
    const connection = mongoose.createConnection(url, {
      dbName: opts.dbName,
      serverSelectionTimeoutMS: 5000,
      connectTimeoutMS: 5000,
      socketTimeoutMS: 30_000,
      maxPoolSize: 20,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
    });
    // Without a listener an 'error' event would throw; failures surface through the operations.
    connection.on('error', (err: unknown) => opts.log?.error({ err }, 'mongo connection error'));
    try {
      await connection.asPromise();
      const db = connection.db;
      if (!db) throw new Error('mongo connection has no database');
      let mode: WriteMode;
      if (opts.writes === 'native' || opts.writes === 'locked') {
        mode = opts.writes;
      } else {
        const info = await db.admin().command({ buildInfo: 1 });
        mode = 'ferretdbVersion' in info ? 'locked' : 'native';
        if (mode === 'locked') {
          opts.log?.info(
            { ferretdb: info.ferretdbVersion },
            'FerretDB: filter-dependent writes are serialised per document with leases',
          );
        }
      }
      const lease =
        mode === 'locked'
          ? new FerretDbWriteLease(db, { leaseMs: opts.lockLeaseMs, lockWaitMs: opts.lockWaitMs, log: opts.log })
          : null;
      opts.log?.debug({ db: db.databaseName, mode }, 'document store connected');
      return new MongoDocumentStore(connection, db, lease);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** How writes are made atomic on this server (see {@link WriteMode}). */
  get writeMode(): WriteMode {
    return this.lease ? 'locked' : 'native';
  }

  async collection<T extends StoredDoc>(name: string, indexes: IndexSpec[] = []): Promise<DocumentCollection<T>> {
    let prepared = this.prepared.get(name);
    if (!prepared) {
      prepared = this.prepare(name, indexes);
      this.prepared.set(name, prepared);
      prepared.catch(() => this.prepared.delete(name));
    }
    return new MongoCollection<T>(name, await prepared, this.db, this.lease);
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
    await this.db.admin().ping();
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
