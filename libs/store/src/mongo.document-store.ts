import { randomUUID } from 'node:crypto';
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
import { fromEngineDoc, toEngineFilter, toEngineSort } from './id-mapping';

type Raw = Record<string, unknown>;
type NativeCollection = mongoose.mongo.Collection<Raw>;

/**
 * How single-document writes are made atomic.
 * - `native`: the server's own `findAndModify`/`update`/`delete` (MongoDB: atomic per document).
 * - `locked`: every write that depends on a filter (update, delete) first takes a short lease
 *   on the document in {@link LOCKS}, so writers are serialised per document. Needed for
 *   FerretDB v1, whose updates are a read, an in-process modification and an unconditional
 *   write by `_id` (concurrent `$inc` lose increments, compare-and-set lets several win).
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

/** Collection holding the per-document write leases in locked mode. */
export const LOCKS = '_store_locks';
const DEFAULT_LEASE_MS = 15_000;
const DEFAULT_LOCK_WAIT_MS = 30_000;
/** A filter whose candidate keeps changing under us this often is given up on. */
const MAX_CANDIDATE_ATTEMPTS = 100;

interface LockDoc {
  _id: string;
  token: string;
  expiresAt: Date;
  [key: string]: unknown;
}

interface Context {
  db: mongoose.mongo.Db;
  mode: WriteMode;
  leaseMs: number;
  lockWaitMs: number;
  log?: Logger;
  /** Per-document queues of this process: only one local writer at a time competes for a document's lease. */
  local: Map<string, Promise<void>>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Duplicate key: code 11000 from MongoDB (and from FerretDB on inserts). FerretDB v1 reports a
 * unique index broken by an *update* as InternalError (code 1) carrying SQLite's
 * "UNIQUE constraint failed" (SQLite extended codes 2067 / 1555).
 */
export function isDuplicateKey(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; writeErrors?: { code?: unknown }[] };
  if (e.code === 11000 || e.code === 11001) return true;
  if (Array.isArray(e.writeErrors) && e.writeErrors.some((w) => w.code === 11000)) return true;
  return e.code === 1 && typeof e.message === 'string' && /UNIQUE constraint failed|\((2067|1555)\)/.test(e.message);
}

/** Drops operators with nothing in them (`{ $set: {} }`), which servers reject or treat differently. */
function cleanUpdate(update: Update): Raw {
  const out: Raw = {};
  for (const [op, fields] of Object.entries(update)) {
    if (fields && typeof fields === 'object' && Object.keys(fields).length > 0) out[op] = fields;
  }
  return out;
}

function withId(filter: Filter, id: unknown): Filter {
  if (filter._id === id) return filter;
  return '_id' in filter ? { $and: [filter, { _id: id }] } : { ...filter, _id: id };
}

const isPlainObject = (v: unknown): v is Raw =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && Object.getPrototypeOf(v) === Object.prototype;

function getPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

function valuesEqual(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => valuesEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => valuesEqual(a[k], b[k]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object' && 'equals' in a && typeof a.equals === 'function') return a.equals(b) as boolean;
  return a === b;
}

const isOperatorObject = (v: unknown): v is Raw => isPlainObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

/** The `$pull` condition subset of the port (equality, `$in`; `$eq`, `$ne`, `$nin` for good measure) on one value. */
function matchesValue(value: unknown, cond: unknown): boolean {
  if (!isOperatorObject(cond)) {
    // Equality; a value that is an array matches when one of its members is equal (query semantics).
    return valuesEqual(value, cond) || (Array.isArray(value) && value.some((v) => valuesEqual(v, cond)));
  }
  return Object.entries(cond).every(([op, arg]) => {
    switch (op) {
      case '$eq':
        return matchesValue(value, arg);
      case '$ne':
        return !matchesValue(value, arg);
      case '$in':
        return Array.isArray(arg) && arg.some((a) => matchesValue(value, a));
      case '$nin':
        return Array.isArray(arg) && !arg.some((a) => matchesValue(value, a));
      default:
        throw new Error(`$pull condition operator ${op} is outside the document-store contract`);
    }
  });
}

/** Whether an array element is removed by `$pull: { field: cond }` (MongoDB semantics). */
function pullMatches(elem: unknown, cond: unknown): boolean {
  if (isOperatorObject(cond)) return matchesValue(elem, cond);
  if (isPlainObject(cond)) {
    // A document condition is a query on the element's fields, not a whole-element equality.
    if (!isPlainObject(elem)) return false;
    return Object.entries(cond).every(([path, c]) => matchesValue(getPath(elem, path), c));
  }
  return valuesEqual(elem, cond);
}

/** FerretDB v1 applies `$pull` by whole-element equality only; conditions are evaluated here instead. */
const needsPullRewrite = (update: Raw): boolean =>
  isPlainObject(update.$pull) && Object.values(update.$pull).some((cond) => isPlainObject(cond));

/**
 * Turns the conditional `$pull`s of an update into `$set`s of the filtered arrays, computed from
 * `current`. Only sound while the document cannot change underneath (the caller holds its lock).
 */
function rewritePull(update: Raw, current: Raw): Raw {
  const pull = { ...(update.$pull as Raw) };
  const set: Raw = { ...((update.$set as Raw | undefined) ?? {}) };
  for (const [path, cond] of Object.entries(pull)) {
    if (!isPlainObject(cond)) continue;
    delete pull[path];
    const arr = getPath(current, path);
    if (!Array.isArray(arr)) continue; // missing: nothing to pull (a non-array is left as MongoDB would: unchanged here)
    const kept = arr.filter((e) => !pullMatches(e, cond));
    if (kept.length !== arr.length) set[path] = kept;
  }
  const out: Raw = { ...update };
  if (Object.keys(pull).length > 0) out.$pull = pull;
  else delete out.$pull;
  if (Object.keys(set).length > 0) out.$set = set;
  return out;
}

class MongoCollection<T extends StoredDoc> implements DocumentCollection<T> {
  constructor(
    private readonly name: string,
    private readonly col: NativeCollection,
    private readonly ctx: Context,
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
    const res = await this.ctx.db.command({ count: this.name, query: toEngineFilter(filter) });
    return Number(res.n);
  }

  async updateOne(filter: Filter, update: Update): Promise<T | null> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (this.ctx.mode === 'native') {
        if (Object.keys(engineUpdate).length === 0) return fromEngineDoc<T>(await this.col.findOne(engineFilter));
        return fromEngineDoc<T>(await this.col.findOneAndUpdate(engineFilter, engineUpdate, { returnDocument: 'after' }));
      }
      return await this.eachCandidate(engineFilter, 1, (id) => this.lockedUpdate(id, engineFilter, engineUpdate)).then((docs) => docs[0] ?? null);
    } catch (err) {
      throw this.mapError(err);
    }
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    const engineFilter = toEngineFilter(filter);
    const engineUpdate = cleanUpdate(update);
    try {
      if (this.ctx.mode === 'native') {
        if (Object.keys(engineUpdate).length === 0) return this.count(filter);
        // Matched rather than modified: NeDB counts every matched document, and so does the port.
        return (await this.col.updateMany(engineFilter, engineUpdate)).matchedCount;
      }
      return (await this.eachCandidate(engineFilter, Infinity, (id) => this.lockedUpdate(id, engineFilter, engineUpdate))).length;
    } catch (err) {
      throw this.mapError(err);
    }
  }

  async deleteOne(filter: Filter): Promise<boolean> {
    const engineFilter = toEngineFilter(filter);
    if (this.ctx.mode === 'native') return (await this.col.deleteOne(engineFilter)).deletedCount > 0;
    return (await this.eachCandidate(engineFilter, 1, (id) => this.lockedDelete(id, engineFilter))).length > 0;
  }

  async deleteMany(filter: Filter): Promise<number> {
    const engineFilter = toEngineFilter(filter);
    if (this.ctx.mode === 'native') return (await this.col.deleteMany(engineFilter)).deletedCount;
    return (await this.eachCandidate(engineFilter, Infinity, (id) => this.lockedDelete(id, engineFilter))).length;
  }

  /**
   * Locked mode: finds documents matching `filter` and applies `write` to each under its lock
   * (`write` re-checks the filter, so a document changed in between is skipped), until `max`
   * writes succeeded or no candidate is left.
   */
  private async eachCandidate<R>(filter: Filter, max: number, write: (id: unknown) => Promise<R | null>): Promise<R[]> {
    const done: R[] = [];
    const id = filter._id;
    if (id !== undefined && id !== null && (typeof id !== 'object' || id instanceof Date)) {
      // The filter names the document: no need to look for it first.
      const result = await write(id);
      return result === null ? done : [result];
    }
    if (max === 1) {
      for (let attempt = 0; attempt < MAX_CANDIDATE_ATTEMPTS; attempt++) {
        const candidate = await this.col.findOne(filter, { projection: { _id: 1 } });
        if (!candidate) return done;
        const result = await write(candidate._id);
        if (result !== null) return [result];
      }
      throw new Error(`${this.name}: the document matching the filter kept changing; gave up after ${MAX_CANDIDATE_ATTEMPTS} attempts`);
    }
    const candidates = await this.col.find(filter, { projection: { _id: 1 } }).toArray();
    for (const c of candidates) {
      const result = await write(c._id);
      if (result !== null) done.push(result);
      if (done.length >= max) break;
    }
    return done;
  }

  private async lockedUpdate(id: unknown, filter: Filter, update: Raw): Promise<T | null> {
    return this.withLock(id, async () => {
      const target = withId(filter, id);
      if (Object.keys(update).length === 0) return fromEngineDoc<T>(await this.col.findOne(target));
      if (needsPullRewrite(update)) {
        const current = await this.col.findOne(target);
        if (!current) return null;
        const rewritten = rewritePull(update, current);
        // The document is held and matched the filter just now: the write can address it by `_id` alone.
        if (Object.keys(rewritten).length === 0) return fromEngineDoc<T>(current);
        return fromEngineDoc<T>(await this.col.findOneAndUpdate({ _id: id } as Filter, rewritten, { returnDocument: 'after' }));
      }
      return fromEngineDoc<T>(await this.col.findOneAndUpdate(target, update, { returnDocument: 'after' }));
    });
  }

  private async lockedDelete(id: unknown, filter: Filter): Promise<true | null> {
    return this.withLock(id, async () => ((await this.col.deleteOne(withId(filter, id))).deletedCount > 0 ? true : null));
  }

  private async withLock<R>(id: unknown, body: () => Promise<R>): Promise<R> {
    const key = `${this.name}/${String(id)}`;
    const previous = this.ctx.local.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    const tail = previous.then(() => mine);
    this.ctx.local.set(key, tail);
    await previous;
    try {
      return await this.withLeasedLock(key, id, body);
    } finally {
      done();
      if (this.ctx.local.get(key) === tail) this.ctx.local.delete(key);
    }
  }

  private async withLeasedLock<R>(key: string, id: unknown, body: () => Promise<R>): Promise<R> {
    const locks = this.ctx.db.collection<LockDoc>(LOCKS);
    const token = randomUUID();
    const started = Date.now();
    let delay = 2;
    for (;;) {
      const now = Date.now();
      try {
        await locks.insertOne({ _id: key, token, expiresAt: new Date(now + this.ctx.leaseMs) });
        break;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      const held = await locks.findOne({ _id: key });
      if (held && held.expiresAt.getTime() < now) {
        // The holder died (or stalled past its lease): take the lock over.
        this.ctx.log?.warn({ collection: this.name, id, holder: held.token }, 'taking over an expired document lock');
        await locks.deleteOne({ _id: key, token: held.token });
        continue;
      }
      if (now - started > this.ctx.lockWaitMs) throw new Error(`${this.name}: timed out waiting for the write lock on ${String(id)}`);
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 50);
    }
    try {
      return await body();
    } finally {
      await locks.deleteOne({ _id: key, token }).catch((err: unknown) => {
        this.ctx.log?.warn({ err, collection: this.name, id }, 'could not release a document lock; it expires with its lease');
      });
    }
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
    private readonly ctx: Context,
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
          opts.log?.info({ ferretdb: info.ferretdbVersion }, 'FerretDB: filter-dependent writes are serialised per document with leases');
        }
      }
      const ctx: Context = {
        db,
        mode,
        leaseMs: opts.lockLeaseMs ?? DEFAULT_LEASE_MS,
        lockWaitMs: opts.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
        log: opts.log,
        local: new Map(),
      };
      opts.log?.debug({ db: db.databaseName, mode }, 'document store connected');
      return new MongoDocumentStore(connection, ctx);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** How writes are made atomic on this server (see {@link WriteMode}). */
  get writeMode(): WriteMode {
    return this.ctx.mode;
  }

  async collection<T extends StoredDoc>(name: string, indexes: IndexSpec[] = []): Promise<DocumentCollection<T>> {
    let prepared = this.prepared.get(name);
    if (!prepared) {
      prepared = this.prepare(name, indexes);
      this.prepared.set(name, prepared);
      prepared.catch(() => this.prepared.delete(name));
    }
    return new MongoCollection<T>(name, await prepared, this.ctx);
  }

  private async prepare(name: string, indexes: IndexSpec[]): Promise<NativeCollection> {
    const col = this.ctx.db.collection<Raw>(name);
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
    await this.ctx.db.admin().ping();
  }

  async close(): Promise<void> {
    this.prepared.clear();
    await this.connection.close();
  }

  /** Drops the whole database (tests). */
  async dropDatabase(): Promise<void> {
    await this.ctx.db.dropDatabase();
  }
}
