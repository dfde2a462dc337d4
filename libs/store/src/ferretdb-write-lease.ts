import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type mongoose from 'mongoose';
import type { Logger } from 'pino';
import type { Filter } from './document-store';
import { isDuplicateKey } from './mongo-errors';
import { getPath, isPlainObject, pullMatches } from './pull-matcher';

type Raw = Record<string, unknown>;
type NativeCollection = mongoose.mongo.Collection<Raw>;

/** Collection holding the per-document write leases. */
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

export interface WriteLeaseOptions {
  /** Lease on a document lock before another writer may take it over. */
  leaseMs?: number;
  /** How long a writer waits for a document lock before failing. */
  lockWaitMs?: number;
  log?: Logger;
}

function withId(filter: Filter, id: unknown): Filter {
  if (filter._id === id) return filter;
  return '_id' in filter ? { $and: [filter, { _id: id }] } : { ...filter, _id: id };
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

/**
 * The FerretDB v1 workaround, used only when the server says it is FerretDB: its updates are a read, an
 * in-process modification and an unconditional write by `_id` (concurrent `$inc` lose increments,
 * compare-and-set lets several win). Every write that depends on a filter (update, delete) first takes a
 * short lease on the document in {@link LOCKS}, so writers are serialised per document. Filters and
 * updates are in engine form (`_id`), documents are returned as stored.
 */
export class FerretDbWriteLease {
  /** Per-document queues of this process: only one local writer at a time competes for a document's lease. */
  private readonly local = new Map<string, Promise<void>>();
  private readonly leaseMs: number;
  private readonly lockWaitMs: number;
  private readonly log?: Logger;

  constructor(
    private readonly db: mongoose.mongo.Db,
    opts: WriteLeaseOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.lockWaitMs = opts.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
    this.log = opts.log;
  }

  async updateOne(name: string, col: NativeCollection, filter: Filter, update: Raw): Promise<Raw | null> {
    const docs = await this.eachCandidate(name, col, filter, 1, (id) =>
      this.lockedUpdate(name, col, id, filter, update),
    );
    return docs[0] ?? null;
  }

  async updateMany(name: string, col: NativeCollection, filter: Filter, update: Raw): Promise<number> {
    return (
      await this.eachCandidate(name, col, filter, Infinity, (id) => this.lockedUpdate(name, col, id, filter, update))
    ).length;
  }

  async deleteOne(name: string, col: NativeCollection, filter: Filter): Promise<boolean> {
    return (
      (await this.eachCandidate(name, col, filter, 1, (id) => this.lockedDelete(name, col, id, filter))).length > 0
    );
  }

  async deleteMany(name: string, col: NativeCollection, filter: Filter): Promise<number> {
    return (await this.eachCandidate(name, col, filter, Infinity, (id) => this.lockedDelete(name, col, id, filter)))
      .length;
  }

  /**
   * Finds documents matching `filter` and applies `write` to each under its lock (`write` re-checks
   * the filter, so a document changed in between is skipped), until `max` writes succeeded or no
   * candidate is left.
   */
  private async eachCandidate<R>(
    name: string,
    col: NativeCollection,
    filter: Filter,
    max: number,
    write: (id: unknown) => Promise<R | null>,
  ): Promise<R[]> {
    const done: R[] = [];
    const id = filter._id;
    if (id !== undefined && id !== null && (typeof id !== 'object' || id instanceof Date)) {
      // The filter names the document: no need to look for it first.
      const result = await write(id);
      return result === null ? done : [result];
    }
    if (max === 1) {
      for (let attempt = 0; attempt < MAX_CANDIDATE_ATTEMPTS; attempt++) {
        const candidate = await col.findOne(filter, { projection: { _id: 1 } });
        if (!candidate) return done;
        const result = await write(candidate._id);
        if (result !== null) return [result];
      }
      throw new Error(
        `${name}: the document matching the filter kept changing; gave up after ${MAX_CANDIDATE_ATTEMPTS} attempts`,
      );
    }
    const candidates = await col.find(filter, { projection: { _id: 1 } }).toArray();
    for (const c of candidates) {
      const result = await write(c._id);
      if (result !== null) done.push(result);
      if (done.length >= max) break;
    }
    return done;
  }

  private async lockedUpdate(
    name: string,
    col: NativeCollection,
    id: unknown,
    filter: Filter,
    update: Raw,
  ): Promise<Raw | null> {
    return this.withLock(name, id, async () => {
      const target = withId(filter, id);
      if (Object.keys(update).length === 0) return col.findOne(target);
      if (needsPullRewrite(update)) {
        const current = await col.findOne(target);
        if (!current) return null;
        const rewritten = rewritePull(update, current);
        // The document is held and matched the filter just now: the write can address it by `_id` alone.
        if (Object.keys(rewritten).length === 0) return current;
        return col.findOneAndUpdate({ _id: id } as Filter, rewritten, { returnDocument: 'after' });
      }
      return col.findOneAndUpdate(target, update, { returnDocument: 'after' });
    });
  }

  private async lockedDelete(name: string, col: NativeCollection, id: unknown, filter: Filter): Promise<true | null> {
    return this.withLock(name, id, async () =>
      (await col.deleteOne(withId(filter, id))).deletedCount > 0 ? true : null,
    );
  }

  private async withLock<R>(name: string, id: unknown, body: () => Promise<R>): Promise<R> {
    const key = `${name}/${String(id)}`;
    const previous = this.local.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    const tail = previous.then(() => mine);
    this.local.set(key, tail);
    await previous;
    try {
      return await this.withLeasedLock(name, key, id, body);
    } finally {
      done();
      if (this.local.get(key) === tail) this.local.delete(key);
    }
  }

  private async withLeasedLock<R>(name: string, key: string, id: unknown, body: () => Promise<R>): Promise<R> {
    const locks = this.db.collection<LockDoc>(LOCKS);
    const token = randomUUID();
    const started = Date.now();
    let delay = 2;
    for (;;) {
      const now = Date.now();
      try {
        await locks.insertOne({ _id: key, token, expiresAt: new Date(now + this.leaseMs) });
        break;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      const held = await locks.findOne({ _id: key });
      if (held && held.expiresAt.getTime() < now) {
        // The holder died (or stalled past its lease): take the lock over.
        this.log?.warn({ collection: name, id, holder: held.token }, 'taking over an expired document lock');
        await locks.deleteOne({ _id: key, token: held.token });
        continue;
      }
      if (now - started > this.lockWaitMs)
        throw new Error(`${name}: timed out waiting for the write lock on ${String(id)}`);
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 50);
    }
    try {
      return await body();
    } finally {
      await locks.deleteOne({ _id: key, token }).catch((err: unknown) => {
        this.log?.warn({ err, collection: name, id }, 'could not release a document lock; it expires with its lease');
      });
    }
  }
}
