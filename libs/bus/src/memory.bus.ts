import { subjects, streams, type EventPayload, type Subject } from '@estate/contracts/events';
import type { Logger } from 'pino';
import {
  RetryLater,
  Unprocessable,
  subjectMatches,
  type Bus,
  type BusMessage,
  type PublishOptions,
  type SubscribeOptions,
  type Subscription,
} from './bus';
import { metrics, reportBacklog } from '@estate/platform/metrics';
import { KeyedScheduler } from './keyed-scheduler';

interface Member {
  handler: (message: BusMessage<Subject>) => Promise<void>;
  active: boolean;
}

interface Group {
  subjects: readonly Subject[];
  maxDeliver: number;
  members: Member[];
  next: number;
  /** Hands out the group's messages: one at a time unless the subscriber asked for more, per entity in order. */
  scheduler: KeyedScheduler;
  keyOf: (message: BusMessage<Subject>) => string;
}

const DEFAULT_MAX_DELIVER = 8;
/** JetStream's duplicate window, and the ids kept before older ones are looked at for forgetting. */
const DUPLICATE_WINDOW_MS = 120_000;
const DUPLICATE_WINDOW_KEPT = 10_000;

/**
 * In-process bus for the embedded profile. Each durable group gets every message once, in
 * publish order (per entity when the group handles several at once), handed to one of its
 * members in turn. For event streams `publish` resolves only after every group has handled the
 * message, so an outbox that clears its entries after a publish never drops an event on a crash.
 * Work-queue subjects resolve on enqueue (their jobs are recorded in the store and resumed at
 * start).
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  private readonly groups = new Map<string, Group>();
  private readonly listeners = new Set<{ pattern: string; handler: (data: unknown, subject: string) => void }>();
  private readonly seen = new Map<string, number>();
  private readonly inflight = new Set<Promise<void>>();
  private closed = false;
  /** Messages published and not yet handled, per durable group (the lag and queue-depth metrics). */
  private readonly pending = new Map<string, number>();
  private readonly unreport: () => void;

  constructor(
    private readonly log: Logger,
    private readonly retryBaseMs = 50,
  ) {
    this.unreport = reportBacklog({ backlog: async () => this.backlog() });
  }

  private backlog() {
    const consumers = [...this.groups.entries()].map(([durable, group]) => ({
      durable,
      stream: subjects[group.subjects[0]].stream as string,
      pending: this.pending.get(durable) ?? 0,
    }));
    const queues = new Map<string, number>();
    for (const c of consumers)
      if ((streams[c.stream as keyof typeof streams] as { workQueue: boolean }).workQueue)
        queues.set(c.stream, (queues.get(c.stream) ?? 0) + c.pending);
    return { consumers, queues: [...queues].map(([stream, depth]) => ({ stream, depth })) };
  }

  async publish<S extends Subject>(subject: S, payload: EventPayload<S>, options: PublishOptions = {}): Promise<void> {
    if (this.closed) throw new Error('bus closed');
    const parsed = subjects[subject].schema.parse(payload) as EventPayload<S>;
    const msgId = options.msgId ?? (parsed as { eventId?: string }).eventId;
    if (msgId && this.isDuplicate(msgId)) return;
    const deliveries: Promise<void>[] = [];
    for (const [durable, group] of this.groups) {
      if (!group.subjects.includes(subject)) continue;
      const message = {
        subject,
        payload: parsed,
        requestId: options.requestId,
        deliveryCount: 1,
      } as BusMessage<Subject>;
      this.pending.set(durable, (this.pending.get(durable) ?? 0) + 1);
      deliveries.push(
        group.scheduler
          .run(group.keyOf(message), () => this.deliver(durable, group, message))
          .finally(() => this.pending.set(durable, (this.pending.get(durable) ?? 1) - 1)),
      );
    }
    const all = Promise.all(deliveries).then(() => undefined);
    this.track(all);
    const stream = streams[subjects[subject].stream as keyof typeof streams] as { workQueue: boolean };
    if (!stream.workQueue) await all;
  }

  async subscribe<S extends Subject>(
    list: readonly S[],
    options: SubscribeOptions<S>,
    handler: (message: BusMessage<S>) => Promise<void>,
  ): Promise<Subscription> {
    let group = this.groups.get(options.durable);
    if (!group) {
      let n = 0;
      const orderKey = options.orderKey as ((message: BusMessage<Subject>) => string) | undefined;
      group = {
        subjects: list,
        maxDeliver: options.maxDeliver ?? DEFAULT_MAX_DELIVER,
        members: [],
        next: 0,
        scheduler: new KeyedScheduler(options.concurrency ?? 1),
        // Without an order key every message is its own entity.
        keyOf: orderKey ?? (() => String(n++)),
      };
      this.groups.set(options.durable, group);
    }
    const member: Member = { handler: handler as Member['handler'], active: true };
    group.members.push(member);
    return {
      stop: async () => {
        member.active = false;
        group.members = group.members.filter((m) => m !== member);
        await group.scheduler.idle();
      },
    };
  }

  notify(subject: string, data: unknown): void {
    for (const l of this.listeners) {
      if (!subjectMatches(l.pattern, subject)) continue;
      try {
        l.handler(data, subject);
      } catch (err) {
        this.log.warn({ err, subject }, 'transient listener failed');
      }
    }
  }

  listen(pattern: string, handler: (data: unknown, subject: string) => void): Subscription {
    const entry = { pattern, handler };
    this.listeners.add(entry);
    return { stop: async () => void this.listeners.delete(entry) };
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('bus closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unreport();
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    this.listeners.clear();
  }

  private async deliver(durable: string, group: Group, message: BusMessage<Subject>): Promise<void> {
    for (let attempt = 1; attempt <= group.maxDeliver; attempt++) {
      const member = this.pick(group);
      if (!member) return; // nobody listening any more: like a consumer that was deleted
      if (attempt > 1) metrics.redeliveries.inc({ subject: message.subject, durable });
      try {
        await member.handler({ ...message, deliveryCount: attempt });
        return;
      } catch (err) {
        if (err instanceof Unprocessable) {
          this.log.error(
            { err, durable, subject: message.subject, requestId: message.requestId },
            'message dropped: unprocessable',
          );
          return;
        }
        const delay =
          err instanceof RetryLater
            ? Math.min(err.delayMs, 5000)
            : Math.min(this.retryBaseMs * 2 ** (attempt - 1), 5000);
        // A RetryLater is the handler's own choice (wait for a lease, hand work back), not a failure.
        if (err instanceof RetryLater)
          this.log.debug(
            { reason: err.message, durable, subject: message.subject, attempt, requestId: message.requestId },
            'handler deferred the message; redelivering',
          );
        else
          this.log.warn(
            { err, durable, subject: message.subject, attempt, requestId: message.requestId },
            'handler failed; redelivering',
          );
        if (this.closed) return;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    this.log.error(
      { durable, subject: message.subject, requestId: message.requestId },
      'message dropped after max deliveries',
    );
  }

  private pick(group: Group): Member | undefined {
    const active = group.members.filter((m) => m.active);
    if (active.length === 0) return undefined;
    const member = active[group.next % active.length];
    group.next++;
    return member;
  }

  /** Mirrors JetStream's duplicate window: the same message id within two minutes is dropped. */
  private isDuplicate(msgId: string): boolean {
    const now = Date.now();
    // The map is in insertion order, oldest first: forget from the front until an entry inside the window.
    if (this.seen.size > DUPLICATE_WINDOW_KEPT)
      for (const [id, at] of this.seen) {
        if (now - at <= DUPLICATE_WINDOW_MS) break;
        this.seen.delete(id);
      }
    const at = this.seen.get(msgId);
    if (at !== undefined && now - at <= DUPLICATE_WINDOW_MS) return true;
    // Re-inserted at the back, so the map stays in time order.
    this.seen.delete(msgId);
    this.seen.set(msgId, now);
    return false;
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }
}
