import { randomUUID } from 'node:crypto';
import type { EventPayload, Subject } from '@estate/contracts/events';
import { DependencyUnavailable } from '@estate/platform/errors';
import type { DocumentCollection, StoredDoc, Update } from '@estate/store';
import type { Logger } from 'pino';
import type { Bus } from './bus';
import { metrics, secondsSince } from '@estate/platform/metrics';
import { KeyedScheduler } from './keyed-scheduler';
import type { UnitOfWork } from './unit-of-work';

const causeOf = (err: DependencyUnavailable): string =>
  err.extra.cause instanceof Error ? err.extra.cause.message : err.detail;

/**
 * What a failure that is retried later puts in its log line: an engine away is expected while it lasts (which
 * engine and why, no stack); anything else is logged whole.
 */
export function retriedFailure(err: unknown): Record<string, unknown> {
  return err instanceof DependencyUnavailable ? { dependency: err.dependency, reason: causeOf(err) } : { err };
}
/**
 * Transactional outbox without multi-document transactions (FerretDB has none):
 * the event is written into the changed document itself, in the same single-document write,
 * and a relay publishes it afterwards and clears it. A crash between the write and the publish
 * leaves the entry in the document; the next sweep (at the latest on restart) publishes it.
 * JetStream de-duplicates by event id and consumers are idempotent, so a publish repeated
 * after a crash is harmless.
 */
export interface OutboxEntry {
  eventId: string;
  subject: Subject;
  payload: unknown;
  requestId?: string;
}

export interface OutboxFields {
  version: number;
  _outbox?: OutboxEntry[];
  _outboxPending?: boolean;
  /** Tombstone: the document is gone for readers and is removed once its events are out. */
  _deleted?: boolean;
}

export type OutboxDoc = StoredDoc & OutboxFields;

export function outboxEntry<S extends Subject>(
  subject: S,
  payload: Omit<EventPayload<S>, 'eventId'> & { eventId?: string },
  requestId?: string,
): OutboxEntry {
  const eventId = payload.eventId ?? randomUUID();
  return { eventId, subject, payload: { ...payload, eventId }, requestId };
}

/** Fields to put on a new document so its creation event goes out with it. */
export function withOutbox(entry: OutboxEntry): Required<Pick<OutboxFields, '_outbox' | '_outboxPending'>> {
  return { _outbox: [entry], _outboxPending: true };
}

/** Adds the event to an update of an existing document. */
export function updateWithOutbox(update: Update, entry: OutboxEntry): Update {
  return { ...update, $set: { ...update.$set, _outboxPending: true }, $push: { ...update.$push, _outbox: entry } };
}

/** A filter fragment that hides tombstones from readers. */
export const notDeleted = { _deleted: { $ne: true } } as const;

/** Strips the outbox bookkeeping from a document before it leaves the repository. */
export function withoutOutbox<T extends OutboxDoc>(doc: T): Omit<T, '_outbox' | '_outboxPending' | '_deleted'> {
  const { _outbox, _outboxPending, _deleted, ...rest } = doc;
  return rest;
}

const SWEEP_LIMIT = 200;
/** Documents relayed at once by a sweep: a publish and a store write each, mostly waiting on round trips. */
const RELAY_CONCURRENCY = 16;

export class OutboxRelay {
  private readonly collections: { name: string; col: DocumentCollection<OutboxDoc> }[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly deps: {
      bus: Bus;
      log: Logger;
      intervalMs?: number;
      /** The unit of work of the service's store: its unpublished events, and how a sweep's clearing commits. */
      units: Pick<UnitOfWork, 'batch' | 'sweep'>;
    },
  ) {}

  /** Publishes the outbox entries of a collection's documents. */
  watch<T extends OutboxDoc>(name: string, col: DocumentCollection<T>): void {
    // The relay reads and clears only the outbox fields, which every T has.
    this.collections.push({ name, col: col as unknown as DocumentCollection<OutboxDoc> });
  }

  /** Sweeps now and then every interval (a safety net for kicks lost to a crash). */
  start(): void {
    this.stopped = false;
    this.kick();
    this.timer = setInterval(() => this.kick(), this.deps.intervalMs ?? 1000);
    this.timer.unref();
  }

  /** Asks for a sweep soon; call after a write that carried events. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Publishes everything pending; resolves when the outbox was empty at some point. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    await this.sweep();
  }

  /**
   * Publishes one document's pending events now, in the flow of the request that just wrote it.
   * Under sustained writes one sweeping loop falls behind many concurrent writers; publishing from
   * each writer keeps the outbox near empty. The sweep still catches what this misses (a crash).
   */
  async relayNow(name: string, id: string): Promise<void> {
    const watched = this.collections.find((c) => c.name === name);
    if (!watched) throw new Error(`outbox relay does not watch collection ${name}`);
    if (this.stopped) return;
    const doc = await watched.col.findOne({ id, _outboxPending: true });
    if (doc) await this.relay(name, watched.col, doc);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.sweep();
      } catch (err) {
        // An engine away is expected and retried: one line, no stack, while it lasts.
        if (err instanceof DependencyUnavailable)
          this.deps.log.warn(retriedFailure(err), 'outbox sweep waits; will retry');
        else this.deps.log.error({ err }, 'outbox sweep failed; will retry');
        return;
      }
    } while (this.again && !this.stopped);
  }

  /**
   * Publishes what committed units left, then takes up to SWEEP_LIMIT pending documents from each collection in
   * turn, so a backlog in one never holds up another.
   */
  private async sweep(): Promise<void> {
    for (let more = true; more;) {
      more = await this.deps.units.sweep((entries) => this.publishEntries(entries), SWEEP_LIMIT);
      for (const { name, col } of this.collections) {
        const docs = await col.find({ _outboxPending: true }, { limit: SWEEP_LIMIT });
        await this.relayAll(name, col, docs);
        if (docs.length === SWEEP_LIMIT) more = true;
      }
    }
  }

  /**
   * Publishes several documents' events at once (each document's in order: documents are independent of each
   * other), then clears the published ones together (one commit where the store has transactions).
   */
  private async relayAll(name: string, col: DocumentCollection<OutboxDoc>, docs: OutboxDoc[]): Promise<void> {
    if (docs.length === 0) return;
    const relaying = new KeyedScheduler(RELAY_CONCURRENCY);
    const outcomes = await Promise.allSettled(docs.map((doc) => relaying.run(doc.id, () => this.publish(doc))));
    const published = docs.filter((_, i) => outcomes[i].status === 'fulfilled');
    await this.deps.units.batch(() => Promise.all(published.map((doc) => this.settle(name, col, doc))));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async relay(name: string, col: DocumentCollection<OutboxDoc>, doc: OutboxDoc): Promise<void> {
    await this.publish(doc);
    await this.settle(name, col, doc);
  }

  private async publish(doc: OutboxDoc): Promise<void> {
    await this.publishEntries(doc._outbox ?? []);
  }

  private publishEntries(entries: OutboxEntry[]): Promise<void> {
    return publishEntries(this.deps.bus, entries);
  }

  /** Clears the published entries of `doc`, or removes its tombstone; what was added meanwhile stays for the next sweep. */
  private async settle(name: string, col: DocumentCollection<OutboxDoc>, doc: OutboxDoc): Promise<void> {
    if (await settleOutbox(col, doc)) return;
    this.again = true;
    this.deps.log.debug({ collection: name, id: doc.id }, 'outbox entry changed during relay; resweeping');
  }
}

/** Publishes outbox entries in order, each with its event id as the message id (the bus drops a repeat). */
export async function publishEntries(bus: Bus, entries: OutboxEntry[]): Promise<void> {
  for (const e of entries) {
    await bus.publish(e.subject, e.payload as never, { msgId: e.eventId, requestId: e.requestId });
    metrics.outboxLag.observe({ subject: e.subject }, secondsSince((e.payload as { occurredAt?: string }).occurredAt));
  }
}

/**
 * After `doc`'s outbox was published: clears it, or removes the document when it is a tombstone, if the document
 * is still at the version read (true). Otherwise pulls just the entries published and leaves the rest (false).
 */
export async function settleOutbox<T extends OutboxDoc>(col: DocumentCollection<T>, doc: OutboxDoc): Promise<boolean> {
  const entries = doc._outbox ?? [];
  if (doc._deleted) {
    if (await col.deleteOne({ id: doc.id, version: doc.version, _outboxPending: true })) return true;
  } else if (
    await col.updateOne(
      { id: doc.id, version: doc.version, _outboxPending: true },
      { $set: { _outbox: [], _outboxPending: false } },
    )
  ) {
    return true;
  }
  // The document changed while we published: drop what went out, leave the rest for the next sweep.
  if (entries.length > 0) {
    await col.updateOne({ id: doc.id }, { $pull: { _outbox: { eventId: { $in: entries.map((e) => e.eventId) } } } });
  }
  return false;
}
