import type { DocumentCollection, Filter, Update } from '@estate/store';
import type { Logger } from 'pino';
import type { Bus } from './bus';
import { publishEntries, retriedFailure, settleOutbox, withOutbox, type OutboxDoc, type OutboxEntry } from './outbox';
import { appendToOutbox, type Unit, type UnitOfWork } from './unit-of-work';

interface Written {
  col: DocumentCollection<OutboxDoc>;
  /** The document as the write left it: its whole outbox, entries a crash left before included. */
  doc: OutboxDoc;
}

class MongoUnit implements Unit {
  readonly written: Written[] = [];

  constructor(private readonly log: Logger) {}

  async insert<T extends OutboxDoc>(col: DocumentCollection<T>, doc: T, events: OutboxEntry[]): Promise<T> {
    const stored = events.length > 0 ? { ...doc, ...withOutboxAll(events) } : doc;
    await col.insertOne(stored);
    if (events.length > 0) this.remember(col, stored);
    return doc;
  }

  async update<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    update: Update,
    events: OutboxEntry[],
  ): Promise<T | null> {
    const saved = await col.updateOne(filter, appendToOutbox(update, events));
    if (saved && events.length > 0) this.remember(col, saved);
    return saved;
  }

  async remove<T extends OutboxDoc>(
    col: DocumentCollection<T>,
    filter: Filter,
    tombstone: Update,
    events: OutboxEntry[],
  ): Promise<boolean> {
    if (events.length === 0) return col.deleteOne(filter);
    // A tombstone, hidden from readers, until its events are out (the relay then removes it).
    const saved = await col.updateOne(
      filter,
      appendToOutbox({ ...tombstone, $set: { ...tombstone.$set, _deleted: true } }, events),
    );
    if (saved) this.remember(col, saved);
    return saved !== null;
  }

  async project(write: () => Promise<void>, options: { readYourWrites: boolean }): Promise<void> {
    if (!options.readYourWrites) return;
    try {
      await write();
    } catch (err) {
      this.log.warn(retriedFailure(err), 'a projection of a write failed after it; its events will bring it');
    }
  }

  private remember<T extends OutboxDoc>(col: DocumentCollection<T>, doc: OutboxDoc): void {
    this.written.push({ col: col as unknown as DocumentCollection<OutboxDoc>, doc });
  }
}

function withOutboxAll(events: OutboxEntry[]): Pick<OutboxDoc, '_outbox' | '_outboxPending'> {
  return events.length === 1 ? withOutbox(events[0]) : { _outbox: events, _outboxPending: true };
}

/**
 * The unit of work without multi-document transactions (MongoDB, and FerretDB, its test engine): every
 * document write is one atomic single-document write carrying its events in the document's own outbox
 * (decision 0002). The unit's other writes run after it; once `work` is done, the unit publishes the outboxes
 * it wrote and clears them (the relay's per-document step), and what it cannot publish stays for the relay.
 */
export class MongoUnitOfWork implements UnitOfWork {
  constructor(private readonly deps: { bus: Bus; log: Logger }) {}

  async run<R>(work: (unit: Unit) => Promise<R>): Promise<R> {
    const unit = new MongoUnit(this.deps.log);
    try {
      return await work(unit);
    } finally {
      // What was written is committed even when `work` failed after it: its events go out now.
      await this.publish(unit.written);
    }
  }

  /** A unit publishes before it resolves. */
  async settled(): Promise<void> {}

  batch<R>(fn: () => Promise<R>): Promise<R> {
    return fn();
  }

  /** Every event lives in its document's outbox, which the relay sweeps per collection. */
  async sweep(): Promise<boolean> {
    return false;
  }

  private async publish(written: Written[]): Promise<void> {
    const sent = new Set<string>();
    for (const { col, doc } of written) {
      try {
        // A document written twice in the unit holds the first write's events in both outboxes read.
        const entries = (doc._outbox ?? []).filter((e) => !sent.has(e.eventId));
        await publishEntries(this.deps.bus, entries);
        for (const e of entries) sent.add(e.eventId);
        await settleOutbox(col, doc);
      } catch (err) {
        this.deps.log.warn(
          { ...retriedFailure(err), id: doc.id },
          "publishing a document's events failed; the relay will retry",
        );
        return;
      }
    }
  }
}
