import type { DocumentCollection, Filter, Update } from '@estate/store';
import { runScoped, scopeOf } from '@estate/store/async-scope';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type { Bus } from './bus';
import { publishEntries, retriedFailure, type OutboxDoc, type OutboxEntry } from './outbox';
import type { Unit, UnitOfWork } from './unit-of-work';

/** What a unit needs of the SQLite document store: its connection, its transactions and its turns on the connection. */
export interface SqliteTransactions {
  readonly database: Database.Database;
  transaction<R>(fn: () => Promise<R>): Promise<R>;
  turn(): Promise<void>;
  write<R>(body: () => R): R;
  statement(sql: string): Database.Statement;
}

/** Events of committed units being published beyond which a unit waits for some of them before it resolves. */
const MAX_BACKLOG = 1000;
/** Units waiting for the connection that commit together (each in its own savepoint): one commit for all of them. */
const MAX_GROUP = 64;
/** Rows of published events kept before a unit deletes them (the relay's sweep deletes the rest). */
const DELETE_BATCH = 64;

/** The outbox table, beside the collections in the service's file. */
const TABLE = '"outbox$events"';

interface Staged {
  seq: number;
  entry: OutboxEntry;
}

class SqliteUnit implements Unit {
  readonly staged: Staged[] = [];

  constructor(private readonly units: SqliteUnitOfWork) {}

  async insert<T extends OutboxDoc>(col: DocumentCollection<T>, doc: T, events: OutboxEntry[]): Promise<T> {
    await col.insertOne(doc);
    this.stage(events);
    return doc;
  }

  async update<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    update: Update,
    events: OutboxEntry[],
  ): Promise<T | null> {
    const saved = await col.updateOne(filter, update);
    if (saved) this.stage(events);
    return saved;
  }

  async remove<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    _tombstone: Update,
    events: OutboxEntry[],
  ): Promise<boolean> {
    // The event commits with the delete: no tombstone needs to outlive it.
    const removed = await col.deleteOne(filter);
    if (removed) this.stage(events);
    return removed;
  }

  async project(write: () => Promise<void>): Promise<void> {
    await write();
  }

  private stage(events: OutboxEntry[]): void {
    for (const entry of events) this.staged.push({ seq: this.units.append(entry), entry });
  }
}

/** A unit waiting for the connection, with what its caller awaits. */
interface Queued {
  unit: SqliteUnit;
  work: (unit: Unit) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * The unit of work on one SQLite file: a unit is a transaction of the store (`BEGIN IMMEDIATE` ... `COMMIT`)
 * holding its documents, its events (rows of an outbox table) and whatever else it writes on the connection (the
 * listing search index). Units commit in groups: each runs in its own savepoint of one transaction (a failing unit
 * rolls back alone), and none resolves before that transaction committed. A group takes the units that wait while
 * it runs; the first unit of a turn of the event loop starts one at once, and units started later in the same turn
 * (other requests read in that turn, the consumers of the events just published) wait for the turn's end
 * (`setImmediate`) and commit together. Once committed, the units' events are published in commit order, without
 * waiting for the consumers of earlier ones; the rows of published events are deleted, some at a time, by a later
 * unit's transaction or the relay's next sweep. A process that dies before publishing leaves the rows, which the
 * relay publishes (a repeat after a crash is harmless: consumers are idempotent by event id).
 */
export class SqliteUnitOfWork implements UnitOfWork {
  /** Rows being published by the unit that committed them: the sweep leaves them alone. */
  private readonly inFlight = new Set<number>();
  /** Rows published and not yet deleted. */
  private readonly published = new Set<number>();
  /** Publishes under way (the in-process consumers of committed units' events). */
  private readonly outstanding = new Set<Promise<void>>();
  /** Units waiting for the connection, and whether a group is running them. */
  private readonly queue: Queued[] = [];
  private draining = false;
  /** The group run under way or waiting for the turn's end (it never rejects). */
  private drainRun?: Promise<void>;
  /** A group ran in this turn of the event loop: units queued later in the turn wait for the turn's end. */
  private drainedThisTurn = false;
  /** Resolved when the events being published fall to the backlog bound (one promise for every waiting unit). */
  private shrunk?: { promise: Promise<void>; resolve: () => void };

  constructor(
    private readonly deps: {
      store: SqliteTransactions;
      bus: Bus;
      log: Logger;
    },
  ) {
    deps.store.database.exec(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)`,
    );
  }

  async run<R>(work: (unit: Unit) => Promise<R>): Promise<R> {
    const open = scopeOf<SqliteUnit>(this);
    if (open) return work(open);
    const result = new Promise<R>((resolve, reject) => {
      this.queue.push({
        unit: new SqliteUnit(this),
        work,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
    if (!this.draining) {
      this.draining = true;
      this.drainRun = this.drainedThisTurn
        ? new Promise((resolve) => setImmediate(resolve)).then(() => this.drain())
        : this.drain();
    }
    const value = await result;
    // A busy process builds no unbounded backlog of events: past it, a request waits for some to be published.
    while (this.outstanding.size > MAX_BACKLOG) await this.backlogShrunk();
    return value;
  }

  batch<R>(fn: () => Promise<R>): Promise<R> {
    return this.deps.store.transaction(fn);
  }

  private backlogShrunk(): Promise<void> {
    if (!this.shrunk) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.shrunk = { promise, resolve };
    }
    return this.shrunk.promise;
  }

  /** Resolves when every unit started was committed or rolled back and its events published (or left to the relay). */
  async settled(): Promise<void> {
    while (this.draining || this.outstanding.size > 0) {
      await this.drainRun;
      await Promise.allSettled([...this.outstanding]);
    }
  }

  async sweep(publish: (entries: OutboxEntry[]) => Promise<void>, limit: number): Promise<boolean> {
    const { store } = this.deps;
    await store.turn();
    const skip = this.inFlight.size + this.published.size;
    const rows = (
      store.statement(`SELECT seq, entry FROM ${TABLE} ORDER BY seq LIMIT ?`).all(limit + skip) as {
        seq: number;
        entry: string;
      }[]
    )
      .filter((r) => !this.inFlight.has(r.seq) && !this.published.has(r.seq))
      .slice(0, limit);
    for (const r of rows) this.inFlight.add(r.seq);
    try {
      await publish(rows.map((r) => JSON.parse(r.entry) as OutboxEntry));
      for (const r of rows) this.published.add(r.seq);
    } finally {
      for (const r of rows) this.inFlight.delete(r.seq);
    }
    const cleared = [...this.published];
    if (cleared.length > 0) {
      await store.turn();
      store.write(() => this.deleteRows(cleared));
      for (const seq of cleared) this.published.delete(seq);
    }
    return rows.length === limit;
  }

  /** Writes an event's row in the open transaction; its sequence number. */
  append(entry: OutboxEntry): number {
    const seq = Number(
      this.deps.store.statement(`INSERT INTO ${TABLE} (entry) VALUES (?)`).run(JSON.stringify(entry)).lastInsertRowid,
    );
    this.inFlight.add(seq);
    return seq;
  }

  /**
   * Runs the waiting units, as many as wait (up to MAX_GROUP) in one transaction, each in a savepoint; then settles
   * them: the committed ones publish and resolve, the failed ones reject. Again while units wait.
   */
  private async drain(): Promise<void> {
    this.draining = true;
    if (!this.drainedThisTurn) {
      this.drainedThisTurn = true;
      setImmediate(() => (this.drainedThisTurn = false));
    }
    try {
      while (this.queue.length > 0) {
        const group: { queued: Queued; ok: boolean; value?: unknown; error?: unknown }[] = [];
        const cleared = this.published.size >= DELETE_BATCH ? [...this.published] : [];
        const db = this.deps.store.database;
        try {
          await this.deps.store.transaction(async () => {
            this.deleteRows(cleared);
            while (this.queue.length > 0 && group.length < MAX_GROUP) {
              const queued = this.queue.shift() as Queued;
              const entry: (typeof group)[number] = { queued, ok: false };
              group.push(entry);
              this.deps.store.statement('SAVEPOINT unit').run();
              try {
                entry.value = await runScoped(this, queued.unit, () => queued.work(queued.unit));
                this.deps.store.statement('RELEASE unit').run();
                entry.ok = true;
              } catch (err) {
                entry.error = err;
                // The unit's own writes go; a failure that ended the whole transaction fails the group.
                if (!db.inTransaction) throw err;
                this.deps.store.statement('ROLLBACK TO unit').run();
                this.deps.store.statement('RELEASE unit').run();
              }
            }
          });
        } catch (err) {
          for (const entry of group)
            if (entry.ok) {
              entry.ok = false;
              entry.error = err;
            }
          if (group.length === 0)
            for (const queued of this.queue.splice(0)) group.push({ queued, ok: false, error: err });
        }
        if (group.some((entry) => entry.ok)) for (const seq of cleared) this.published.delete(seq);
        for (const entry of group) {
          const { unit } = entry.queued;
          if (!entry.ok) {
            for (const { seq } of unit.staged) this.inFlight.delete(seq);
            entry.queued.reject(entry.error);
            continue;
          }
          // Published behind the request, in commit order; the in-process consumers run outside it.
          for (const staged of unit.staged) this.publish(staged);
          entry.queued.resolve(entry.value);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private deleteRows(seqs: number[]): void {
    if (seqs.length === 0) return;
    this.deps.store
      .statement(`DELETE FROM ${TABLE} WHERE seq IN (SELECT value FROM json_each(?))`)
      .run(JSON.stringify(seqs));
  }

  /** Publishes a committed event; one that fails stays in the table for the relay. */
  private publish({ seq, entry }: Staged): void {
    const done = publishEntries(this.deps.bus, [entry]).then(
      () => {
        this.inFlight.delete(seq);
        this.published.add(seq);
      },
      (err: unknown) => {
        this.inFlight.delete(seq);
        this.deps.log.warn(
          { ...retriedFailure(err), eventId: entry.eventId },
          'publishing a unit of work failed; the relay will retry',
        );
      },
    );
    this.outstanding.add(done);
    void done.finally(() => {
      this.outstanding.delete(done);
      if (this.outstanding.size <= MAX_BACKLOG && this.shrunk) {
        this.shrunk.resolve();
        this.shrunk = undefined;
      }
    });
  }
}
