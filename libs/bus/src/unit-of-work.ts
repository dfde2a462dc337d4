import type { DocumentCollection, Filter, Update } from '@estate/store';
import type { OutboxDoc, OutboxEntry } from './outbox';

/**
 * The one write path of a service: "write these documents and these events, atomically"
 * (docs/decisions/0126-unit-of-work.md). A service writes through a {@link Unit} and never asks
 * which adapter runs it:
 *
 * - SQLite (`SqliteUnitOfWork`): the unit is one transaction: its documents, its events (an outbox
 *   table) and its projections (the listing's search row) commit together or not at all.
 * - MongoDB (`MongoUnitOfWork`): each document write carries its events in the document's own outbox,
 *   one atomic single-document write; the unit's other writes follow it, and what a failure leaves
 *   out is repaired from the events (their consumers are idempotent).
 *
 * On both, a document write that fails or matches nothing leaves no event, and the events of a
 * unit are published once it has committed, in commit order: MongoDB before `run` resolves, SQLite
 * right behind it (its in-process consumers then run outside the request; `settled` waits for them).
 * A publish that fails, or a process that dies before it, leaves them to the relay's sweep.
 */
export interface UnitOfWork {
  /** Runs `work` as one unit. Called inside another unit of the same adapter, joins it. */
  run<R>(work: (unit: Unit) => Promise<R>): Promise<R>;
  /** Resolves when the events of every unit committed so far were published, or left to the relay. */
  settled(): Promise<void>;
  /** Runs `fn`'s store writes as one commit where the adapter can (the relay clears many outboxes at once). */
  batch<R>(fn: () => Promise<R>): Promise<R>;
  /**
   * For the relay: hands `publish` the events of committed units that were not published (a crash,
   * a failed publish), oldest first, at most `limit`, and forgets them once published. Resolves to
   * true when more may be waiting.
   */
  sweep(publish: (entries: OutboxEntry[]) => Promise<void>, limit: number): Promise<boolean>;
}

export interface Unit {
  /** Inserts `doc` with its events; throws DuplicateKeyError (and writes nothing) when its id or a unique key is taken. */
  insert<T extends OutboxDoc>(col: DocumentCollection<T>, doc: T, events: OutboxEntry[]): Promise<T>;
  /** Updates the first match with its events; null, and no event, when nothing matched (a lost compare-and-set). */
  update<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    update: Update,
    events: OutboxEntry[],
  ): Promise<T | null>;
  /**
   * Removes the first match with its events; false when nothing matched. Where the document must outlive
   * the write until its events are out, it is a tombstone (`tombstone` applied, hidden from readers by
   * `notDeleted`) that the relay removes then.
   */
  remove<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    tombstone: Update,
    events: OutboxEntry[],
  ): Promise<boolean>;
  /**
   * A write of something derived from the unit's documents (a search row, a timeline entry) that its
   * events also bring. Where the unit commits whole, it is written in it (a failure fails the unit).
   * Elsewhere it is written after the document write only when a client waits to read it
   * (`readYourWrites`), and a failure is logged: the events bring it.
   */
  project(write: () => Promise<void>, options: { readYourWrites: boolean }): Promise<void>;
}

/** `update` with `events` appended to the document's own outbox (the in-document outbox of decision 0002). */
export function appendToOutbox(update: Update, events: OutboxEntry[]): Update {
  if (events.length === 0) return update;
  return {
    ...update,
    $set: { ...update.$set, _outboxPending: true },
    $push: { ...update.$push, _outbox: events.length === 1 ? events[0] : { $each: events } },
  };
}
