import type { EventPayload, Subject } from '@estate/contracts/events';

/**
 * The bus port. Durable subjects (the map in contracts/events) go through JetStream in the
 * distributed profile and through an in-process bus in the embedded one. Transient
 * notifications (job progress) are fire-and-forget on both.
 */
export interface PublishOptions {
  /** De-duplication id (JetStream `Nats-Msg-Id`); defaults to the payload's `eventId`. */
  msgId?: string;
  requestId?: string;
}

export type BusMessage<S extends Subject> = {
  [K in S]: {
    subject: K;
    payload: EventPayload<K>;
    requestId?: string;
    /** 1 on first delivery, more on redelivery. */
    deliveryCount: number;
  };
}[S];

export interface SubscribeOptions<S extends Subject = Subject> {
  /**
   * Consumer name. Subscribers sharing a durable name (replicas of one service) share the
   * messages; each distinct durable name receives every message.
   */
  durable: string;
  /** Deliveries before a message is given up on (logged). */
  maxDeliver?: number;
  /** How long a delivery may run before it is considered lost and redelivered. */
  ackWaitMs?: number;
  /**
   * Messages pulled ahead of the one being handled (NATS; the in-process bus hands out one at a
   * time). 1 for long jobs: a prefetched job would sit out its ack wait behind the running one.
   */
  prefetch?: number;
  /**
   * Messages handled at once by this subscriber (default 1: one after another). Above 1, give
   * `orderKey` so that two events of one entity never race each other.
   */
  concurrency?: number;
  /** The entity a message is about: messages with the same key are handled one at a time, in arrival order. */
  orderKey?: (message: BusMessage<S>) => string;
}

/**
 * Events a projection consumer handles at once (each entity's in order): enough to keep up with a
 * few hundred writes a second when each handler waits on a store or an index round trip.
 */
export const EVENT_CONCURRENCY = 16;

export interface Subscription {
  stop(): Promise<void>;
}

/** Throw from a handler for a failure worth retrying later (the message is redelivered). */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly delayMs = 1000,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/** Throw from a handler for a message that can never succeed (it is dropped and logged). */
export class Unprocessable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Unprocessable';
  }
}

export interface Bus {
  readonly kind: 'memory' | 'nats';
  /** Validates the payload against its subject's schema, then publishes durably. */
  publish<S extends Subject>(subject: S, payload: EventPayload<S>, options?: PublishOptions): Promise<void>;
  /** Durable subscription: a handler that resolves acks; one that throws is retried (see RetryLater/Unprocessable). */
  subscribe<S extends Subject>(
    subjects: readonly S[],
    options: SubscribeOptions<S>,
    handler: (message: BusMessage<S>) => Promise<void>,
  ): Promise<Subscription>;
  /** Transient notification, not stored; subscribers that are not listening miss it. */
  notify(subject: string, data: unknown, options?: { requestId?: string }): void;
  /** Listens to transient notifications; `*` matches one subject token, `>` the rest. */
  listen(subject: string, handler: (data: unknown, subject: string) => void): Subscription;
  ping(): Promise<void>;
  /** Stops taking work, lets in-flight handlers finish, closes. */
  close(): Promise<void>;
}

/** NATS-style subject matching: `*` one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
