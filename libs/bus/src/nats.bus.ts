import { subjects, streams, type EventPayload, type StreamName, type Subject } from '@estate/contracts/events';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import {
  headers,
  nanos,
  type MsgHdrs,
  type NatsConnection,
  type Subscription as CoreSubscription,
} from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  RetryLater,
  Unprocessable,
  type Bus,
  type BusMessage,
  type PublishOptions,
  type SubscribeOptions,
  type Subscription,
} from './bus';
import { metrics, reportBacklog } from '@estate/platform/metrics';
import { KeyedScheduler } from './keyed-scheduler';
import { desiredStream, Names, sameList, streamOf, versionAtLeast } from './nats-streams';

export interface NatsBusOptions {
  log: Logger;
  /** Connection name shown by the server (service name and replica). */
  name?: string;
  /** First retry delay for handlers that fail with a plain error; doubles per delivery. */
  retryBaseMs?: number;
  /**
   * When set, durable consumers are created with this inactivity threshold: the server removes a
   * durable nobody has pulled from for that long. For disposable environments and tests only:
   * a service that is down longer would lose its place in the stream.
   */
  consumerInactiveThresholdMs?: number;
  /** Messages pulled ahead of the one being handled, per subscription. */
  prefetch?: number;
  /**
   * Keeps deployments that share one NATS server apart (staging beside production, parallel test
   * stacks): subjects get a `<namespace>.` prefix and streams a `<namespace>_` prefix.
   */
  namespace?: string;
  /** This process's NATS user and password (a server with authorization on); `nats://user:pass@host` works too. */
  user?: string;
  password?: string;
}

import { natsConnectOptions } from './nats-connection';

export { inboxPrefixOf, natsConnectOptions } from './nats-connection';

const REQUEST_ID = 'x-request-id';
const DEFAULT_MAX_DELIVER = 8;
const DEFAULT_ACK_WAIT_MS = 30_000;
const MAX_BACKOFF_MS = 60_000;
const PING_TIMEOUT_MS = 2000;
/** Small, so that replicas share the work and prefetched messages do not sit out their ack wait. */
const DEFAULT_PREFETCH = 4;
/** nats.js's default pull request expiry (`consume()` without `expires`). */
const DEFAULT_PULL_EXPIRES_MS = 30_000;

interface Running {
  stop(): Promise<void>;
}

/**
 * Distributed bus: durable subjects through JetStream (one pull consumer per durable name, shared
 * by the replicas that use it), transient notifications through core NATS.
 */
export class NatsBus implements Bus {
  readonly kind = 'nats' as const;
  private readonly running = new Set<Running>();
  private readonly listeners = new Set<CoreSubscription>();
  private closing?: Promise<void>;
  private readonly multiFilter: boolean;
  private readonly names: Names;
  /** The durable consumers this process reads (stream, durable), for the lag metric. */
  private readonly consumers = new Map<string, { stream: StreamName; durable: string }>();
  private unreport?: () => void;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly opts: NatsBusOptions,
  ) {
    // Several filter subjects on one consumer need NATS 2.10.
    this.multiFilter = versionAtLeast(nc.info?.version, [2, 10, 0]);
    this.names = new Names(opts.namespace);
    this.unreport = reportBacklog({ backlog: () => this.backlog() });
  }

  /** Messages not yet handled per durable consumer of this process, and waiting in each work queue. */
  private async backlog() {
    const consumers = await Promise.all(
      [...this.consumers.values()].map(async ({ stream, durable }) => {
        const info = await this.jsm.consumers.info(this.names.stream(stream), durable);
        return { stream, durable, pending: info.num_pending + info.num_ack_pending };
      }),
    );
    const queues = await Promise.all(
      (Object.keys(streams) as StreamName[])
        .filter((s) => streams[s].workQueue)
        .map(async (stream) => ({
          stream,
          depth: (await this.jsm.streams.info(this.names.stream(stream))).state.messages,
        })),
    );
    return { consumers, queues };
  }

  static async connect(url: string, opts: NatsBusOptions): Promise<NatsBus> {
    const nc = await connect({
      ...natsConnectOptions(url, { user: opts.user, password: opts.password }),
      name: opts.name ?? 'estate',
      timeout: 5000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
    });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 5000 });
      const bus = new NatsBus(nc, jetstream(nc, { timeout: 5000 }), jsm, opts);
      await bus.ensureStreams();
      bus.watchConnection();
      opts.log.debug({ server: nc.info?.version, name: opts.name }, 'nats bus connected');
      return bus;
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /** The connection, for what rides beside the bus on the same server (the gateway's rate-limit bucket). */
  get connection(): NatsConnection {
    return this.nc;
  }

  async publish<S extends Subject>(subject: S, payload: EventPayload<S>, options: PublishOptions = {}): Promise<void> {
    if (this.closing) throw new Error('bus closed');
    const def = subjects[subject];
    if (!def) throw new Error(`unknown subject ${subject}`);
    const parsed = def.schema.parse(payload) as { eventId?: string };
    const msgID = options.msgId ?? parsed.eventId;
    const ack = await this.js.publish(this.names.subject(subject), JSON.stringify(parsed), {
      ...(msgID ? { msgID } : {}),
      headers: this.headersFor(options.requestId),
    });
    if (ack.duplicate)
      this.opts.log.debug({ subject, msgId: msgID, seq: ack.seq }, 'duplicate publish dropped by the stream');
  }

  async subscribe<S extends Subject>(
    list: readonly S[],
    options: SubscribeOptions<S>,
    handler: (message: BusMessage<S>) => Promise<void>,
  ): Promise<Subscription> {
    if (this.closing) throw new Error('bus closed');
    if (list.length === 0) throw new Error('subscribe needs at least one subject');
    const stream = streamOf(list[0]);
    const strays = list.filter((s) => streamOf(s) !== stream);
    if (strays.length > 0)
      throw new Error(`subjects ${strays.join(', ')} are not in stream ${stream}; subscribe to each stream separately`);
    const wanted = new Set<Subject>(list);
    const maxDeliver = options.maxDeliver ?? DEFAULT_MAX_DELIVER;
    const ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;

    await this.ensureConsumer(stream, options.durable, [...wanted], maxDeliver, ackWaitMs);
    this.consumers.set(`${stream}/${options.durable}`, { stream, durable: options.durable });
    const consumer = await this.js.consumers.get(this.names.stream(stream), options.durable);
    const concurrency = options.concurrency ?? 1;
    const scheduler = new KeyedScheduler(concurrency);
    let n = 0;
    // Without an order key every message is its own entity.
    const keyOf = (options.orderKey as ((message: BusMessage<Subject>) => string) | undefined) ?? (() => String(n++));
    const messages: ConsumerMessages = await consumer.consume({
      // Enough pulled ahead to keep every handler slot busy.
      max_messages: Math.max(options.prefetch ?? this.opts.prefetch ?? DEFAULT_PREFETCH, concurrency),
    });
    const log = this.opts.log.child({ durable: options.durable, stream });
    let idleSince = Date.now();
    // nats.js reports a miss after two idle heartbeats (half the 30 s pull expiry each): one reported
    // this soon after a handler ended started while it ran.
    void this.logConsumerStatus(
      messages,
      log,
      () => scheduler.size > 0 || Date.now() - idleSince < DEFAULT_PULL_EXPIRES_MS,
    );

    let stopping = false;
    const loop = (async () => {
      for await (const m of messages) {
        if (stopping) {
          // Pulled but not started: hand it back at once rather than after the ack wait.
          this.settle(m, (x) => x.nak(), log);
          continue;
        }
        void this.handle(
          m,
          wanted,
          maxDeliver,
          ackWaitMs,
          (message) =>
            scheduler.run(keyOf(message), () => (handler as (message: BusMessage<Subject>) => Promise<void>)(message)),
          log,
        ).finally(() => (idleSince = Date.now()));
        // The next message is taken only when a handler slot is free: the prefetch stays the bound.
        await scheduler.room();
      }
      await scheduler.idle(); // the handlers in progress finish
    })().catch((err: unknown) => log.error({ err }, 'consumer loop failed'));

    let stopped: Promise<void> | undefined;
    const running: Running = {
      stop: () =>
        (stopped ??= (async () => {
          stopping = true;
          await messages.close().catch(() => undefined);
          await loop; // the handlers in progress finish
          this.running.delete(running);
        })()),
    };
    this.running.add(running);
    if (this.closing) await running.stop(); // close() began while the consumer was being set up
    return running;
  }

  notify(subject: string, data: unknown, options: { requestId?: string } = {}): void {
    if (this.closing || this.nc.isClosed()) return;
    try {
      this.nc.publish(this.names.subject(subject), JSON.stringify(data), {
        headers: this.headersFor(options.requestId),
      });
    } catch (err) {
      this.opts.log.warn({ err, subject }, 'transient notification not sent');
    }
  }

  listen(subject: string, handler: (data: unknown, subject: string) => void): Subscription {
    const sub = this.nc.subscribe(this.names.subject(subject), {
      callback: (err, msg) => {
        if (err) {
          this.opts.log.warn({ err, subject }, 'transient subscription failed');
          return;
        }
        try {
          handler(msg.json<unknown>(), this.names.local(msg.subject));
        } catch (e) {
          this.opts.log.warn({ err: e, subject: msg.subject }, 'transient listener failed');
        }
      },
    });
    this.listeners.add(sub);
    return {
      stop: async () => {
        this.listeners.delete(sub);
        if (!sub.isClosed()) sub.unsubscribe();
      },
    };
  }

  async ping(): Promise<void> {
    if (this.closing || this.nc.isClosed()) throw new Error('bus closed');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`nats did not answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.nc.flush(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.unreport?.();
      await Promise.all([...this.running].map((r) => r.stop()));
      for (const sub of this.listeners) if (!sub.isClosed()) sub.unsubscribe();
      this.listeners.clear();
      if (!this.nc.isClosed())
        await this.nc.drain().catch((err: unknown) => this.opts.log.warn({ err }, 'nats drain failed'));
    })();
    return this.closing;
  }

  private headersFor(requestId: string | undefined): MsgHdrs | undefined {
    if (!requestId) return undefined;
    const h = headers();
    h.set(REQUEST_ID, requestId);
    return h;
  }

  private async handle(
    m: JsMsg,
    wanted: Set<Subject>,
    maxDeliver: number,
    ackWaitMs: number,
    handler: (message: BusMessage<Subject>) => Promise<void>,
    log: Logger,
  ): Promise<void> {
    const subject = this.names.local(m.subject) as Subject;
    if (!wanted.has(subject)) {
      // Only on servers without multi-subject filters, where the consumer sees the whole stream.
      this.settle(m, (x) => x.ack(), log);
      return;
    }
    const requestId = m.headers?.get(REQUEST_ID) || undefined;
    const deliveryCount = m.info.deliveryCount;
    if (deliveryCount > 1) metrics.redeliveries.inc({ subject, durable: m.info.consumer });
    let payload: unknown;
    try {
      payload = subjects[subject].schema.parse(m.json<unknown>());
    } catch (err) {
      log.error({ err, subject, seq: m.seq, requestId }, 'message dropped: payload does not match its schema');
      this.settle(m, (x) => x.term(), log);
      return;
    }
    // Long handlers keep their delivery: tell the server we are still working well before the ack wait runs out.
    const heartbeat = setInterval(
      () => this.settle(m, (x) => x.working(), log),
      Math.max(100, Math.floor(ackWaitMs / 3)),
    );
    try {
      await handler({ subject, payload, requestId, deliveryCount } as BusMessage<Subject>);
      this.settle(m, (x) => x.ack(), log);
    } catch (err) {
      if (err instanceof Unprocessable) {
        log.error({ err, subject, requestId }, 'message dropped: unprocessable');
        this.settle(m, (x) => x.term(), log);
      } else if (deliveryCount >= maxDeliver) {
        log.error({ err, subject, requestId, deliveryCount }, 'message dropped after max deliveries');
        this.settle(m, (x) => x.term(), log);
      } else {
        const delay =
          err instanceof RetryLater
            ? err.delayMs
            : Math.min((this.opts.retryBaseMs ?? 1000) * 2 ** (deliveryCount - 1), MAX_BACKOFF_MS);
        // A RetryLater is the handler's own choice (wait for a lease, hand work back), not a failure.
        if (err instanceof RetryLater)
          log.debug(
            { reason: err.message, subject, requestId, deliveryCount, delayMs: delay },
            'handler deferred the message; redelivering',
          );
        else log.warn({ err, subject, requestId, deliveryCount, delayMs: delay }, 'handler failed; redelivering');
        this.settle(m, (x) => x.nak(delay), log);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Acks and naks are fire-and-forget; a closed connection makes them throw, which only means redelivery. */
  private settle(m: JsMsg, action: (m: JsMsg) => void, log: Logger): void {
    try {
      action(m);
    } catch (err) {
      log.warn({ err, seq: m.seq }, 'could not settle message; it will be redelivered');
    }
  }

  /** Creates the streams of the contracts, or brings their subjects and limits up to date. */
  private async ensureStreams(): Promise<void> {
    for (const local of Object.keys(streams) as StreamName[]) {
      const want = desiredStream(local, this.names);
      const name = want.name;
      let current: StreamConfig | undefined;
      try {
        current = (await this.jsm.streams.info(name)).config;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (!current) {
        try {
          await this.jsm.streams.add(want);
          this.opts.log.info({ stream: name }, 'stream created');
          continue;
        } catch (err) {
          // Another replica may have created it at the same moment.
          current = (await this.jsm.streams.info(name).catch(() => Promise.reject(err))).config;
        }
      }
      if (current.retention !== want.retention || current.storage !== want.storage) {
        throw new Error(
          `stream ${name} exists with retention ${current.retention}/${current.storage}, contracts want ${want.retention}/${want.storage}; ` +
            'these cannot be changed in place: migrate the stream',
        );
      }
      if (
        !sameList(current.subjects, want.subjects) ||
        current.max_age !== want.max_age ||
        current.duplicate_window !== want.duplicate_window
      ) {
        await this.jsm.streams.update(name, {
          subjects: want.subjects,
          max_age: want.max_age,
          duplicate_window: want.duplicate_window,
        });
        this.opts.log.info({ stream: name }, 'stream updated');
      }
    }
  }

  /** Creates the durable pull consumer or updates the settings that may change. */
  private async ensureConsumer(
    stream: StreamName,
    durable: string,
    list: Subject[],
    maxDeliver: number,
    ackWaitMs: number,
  ): Promise<void> {
    const streamSubjects = desiredStream(stream, this.names).subjects;
    const serverSubjects = list.map((x) => this.names.subject(x));
    // Both keys are always given (one undefined, dropped from the JSON) so an update replaces the
    // other form of filter left in the existing config; the server refuses both at once.
    const filter: Partial<ConsumerConfig> =
      list.length === 1
        ? { filter_subject: serverSubjects[0], filter_subjects: undefined }
        : this.multiFilter
          ? { filter_subject: undefined, filter_subjects: serverSubjects }
          : // Pre-2.10 server: one consumer cannot filter on several subjects; it reads the whole
            // stream and the subjects outside the subscription are acknowledged unseen.
            { filter_subject: streamSubjects.length === 1 ? streamSubjects[0] : undefined, filter_subjects: undefined };
    const changeable: Partial<ConsumerConfig> = {
      ...filter,
      ack_wait: nanos(ackWaitMs),
      max_deliver: maxDeliver,
      ...(this.opts.consumerInactiveThresholdMs
        ? { inactive_threshold: nanos(this.opts.consumerInactiveThresholdMs) }
        : {}),
    };
    const config = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ...changeable,
    } as ConsumerConfig;
    try {
      await this.jsm.consumers.add(this.names.stream(stream), config);
    } catch (addErr) {
      // It exists with other settings (or was created by a replica a moment ago): update it.
      try {
        await this.jsm.consumers.update(this.names.stream(stream), durable, changeable);
      } catch (updateErr) {
        throw new Error(
          `cannot create or update consumer ${durable} on ${stream}: ${(addErr as Error).message}; ${(updateErr as Error).message}`,
          {
            cause: updateErr,
          },
        );
      }
    }
  }

  private async logConsumerStatus(messages: ConsumerMessages, log: Logger, busy: () => boolean): Promise<void> {
    try {
      for await (const s of messages.status()) {
        // The next pull waits for the handler to return, so a long handler (a bulk job) misses heartbeats by design.
        if (s.type === 'heartbeats_missed' && busy())
          log.debug({ status: s.type }, 'jetstream consumer status while the handler runs');
        else if (
          s.type === 'heartbeats_missed' ||
          s.type === 'consumer_not_found' ||
          s.type === 'stream_not_found' ||
          s.type === 'consumer_deleted'
        ) {
          log.warn({ status: s.type }, 'jetstream consumer status');
        }
      }
    } catch {
      // the iterator ends with the consumer
    }
  }

  private watchConnection(): void {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error')
          this.opts.log.warn({ status: s.type }, 'nats connection');
      }
    })().catch(() => undefined);
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: number; name?: string; message?: string };
  return e?.code === 10059 || e?.name === 'StreamNotFoundError' || /stream not found/i.test(e?.message ?? '');
}
