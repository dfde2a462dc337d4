import { AsyncLocalStorage } from 'node:async_hooks';
import type { DocumentCollection, Filter, Update } from '@estate/store';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type { Bus } from './bus';
import { publishEntries, type OutboxDoc, type OutboxEntry } from './outbox';
import type { Unit, UnitOfWork } from './unit-of-work';

/** What a unit needs of the SQLite document store: its connection, its transactions and its turns on the connection. */
export interface SqliteTransactions {
  readonly database: Database.Database;
  transaction<R>(fn: () => Promise<R>): Promise<R>;
  turn(): Promise<void>;
  write<R>(body: () => R): R;
  statement(sql: string): Database.Statement;
}

/** Events of committed units waiting to be published beyond which a unit waits for them before it resolves. */
const MAX_BACKLOG = 1000;

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

/**
 * The unit of work on one SQLite file: a unit is one transaction of the store (`BEGIN IMMEDIATE` ... `COMMIT`)
 * holding its documents, its events (rows of an outbox table) and whatever else it writes on the connection (the
 * listing search index). Once committed, the unit publishes its events; the rows of published events are deleted
 * by the next unit's transaction or the relay's next sweep, so a request commits once. A process that dies
 * before publishing leaves the rows, which the relay publishes (a repeat after a crash is harmless: consumers
 * are idempotent by event id).
 */
export class SqliteUnitOfWork implements UnitOfWork {
  private readonly current = new AsyncLocalStorage<SqliteUnit>();
  /** Rows being published by the unit that committed them: the sweep leaves them alone. */
  private readonly inFlight = new Set<number>();
  /** Rows published and not yet deleted. */
  private readonly published = new Set<number>();
  /** Committed units' events being published, in commit order, and how many are waiting. */
  private publishing: Promise<void> = Promise.resolve();
  private backlog = 0;

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
    const open = this.current.getStore();
    if (open) return work(open);
    const unit = new SqliteUnit(this);
    const cleared = [...this.published];
    let result: R;
    try {
      result = await this.deps.store.transaction(() =>
        this.current.run(unit, () => {
          this.deleteRows(cleared);
          return work(unit);
        }),
      );
    } catch (err) {
      for (const { seq } of unit.staged) this.inFlight.delete(seq);
      throw err;
    }
    for (const seq of cleared) this.published.delete(seq);
    // Published behind the request, in commit order (the in-process consumers run outside it); a request
    // waits only when the events of committed units pile up, so a busy process builds no unbounded backlog.
    this.backlog += unit.staged.length;
    this.publishing = this.publishing.then(() => this.publish(unit.staged));
    if (this.backlog > MAX_BACKLOG) await this.publishing;
    return result;
  }

  batch<R>(fn: () => Promise<R>): Promise<R> {
    return this.deps.store.transaction(fn);
  }

  /** Resolves when every committed unit's events were published (or left to the relay). */
  async settled(): Promise<void> {
    await this.publishing;
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

  private deleteRows(seqs: number[]): void {
    if (seqs.length === 0) return;
    this.deps.store
      .statement(`DELETE FROM ${TABLE} WHERE seq IN (SELECT value FROM json_each(?))`)
      .run(JSON.stringify(seqs));
  }

  /** Publishes a committed unit's events in order; what fails stays in the table for the relay. */
  private async publish(staged: Staged[]): Promise<void> {
    if (staged.length === 0) return;
    this.backlog -= staged.length;
    let sent = 0;
    try {
      for (const { seq, entry } of staged) {
        await publishEntries(this.deps.bus, [entry]);
        this.inFlight.delete(seq);
        this.published.add(seq);
        sent++;
      }
    } catch (err) {
      this.deps.log.warn(
        { err, eventId: staged[sent].entry.eventId },
        'publishing a unit of work failed; the relay will retry',
      );
    } finally {
      for (const { seq } of staged.slice(sent)) this.inFlight.delete(seq);
    }
  }
}
