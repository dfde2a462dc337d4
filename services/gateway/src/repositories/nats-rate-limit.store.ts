import {
  DiscardPolicy,
  JetStreamApiError,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyedScheduler } from '@estate/bus/keyed-scheduler';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { RateLimitCounters, WindowCount } from './rate-limit.counters';
import { MemoryRateLimitCounters } from './rate-limit.counters';

/**
 * The NATS key-value bucket holding the gateways' rate-limit windows. One bucket per server: a namespace (parallel
 * stacks on one server) prefixes the keys instead, so the gateway's NATS user is allowed this one bucket by name.
 */
export const RATE_LIMIT_BUCKET = 'gateway_rate_limits';

/** JetStream's answer to a write whose expected last revision of the key is not the current one. */
const WRONG_LAST_SEQUENCE = 10071;
const STREAM_NOT_FOUND = 10059;
/** How long one NATS call may take before the request is counted in this process instead. */
const CALL_TIMEOUT_MS = 1000;
/** After a failed call, how long requests are counted in this process before NATS is tried again. */
const RETRY_NATS_AFTER_MS = 5000;
const MAX_ATTEMPTS = 24;
/** Keys counted at once by one replica (each key's requests go one after another). */
const CONCURRENT_KEYS = 256;
const MAX_REMEMBERED = 10_000;

class Contended extends Error {
  constructor(key: string) {
    super(`rate-limit counter ${key} stayed contended for ${MAX_ATTEMPTS} attempts`);
  }
}

interface Seen {
  start: number;
  count: number;
  /** The key's revision (stream sequence) this replica last read or wrote. */
  rev: number;
}

/**
 * Rate-limit windows shared by every gateway replica, in a NATS JetStream key-value bucket (the
 * `KV_<bucket>` stream, one message per key, memory storage). A key holds `{ start, count }` of its
 * fixed window; a request increments it with a compare-and-set on the key's revision and retries on a
 * conflict, so replicas never lose each other's counts. A key already at its limit answers from what
 * this replica saw without writing (counts only grow within a window), so a flood costs NATS nothing.
 * When NATS does not answer, requests are counted in this process (each replica then enforces the
 * limit alone) until it answers again: limits stay, at most one per replica, rather than none.
 */
export class NatsRateLimitCounters implements RateLimitCounters {
  private readonly seen = new Map<string, Seen>();
  private readonly fallback = new MemoryRateLimitCounters();
  /** One key's requests in this replica are counted one after another: they would only conflict with each other. */
  private readonly perKey = new KeyedScheduler(CONCURRENT_KEYS);
  private natsAfter = 0;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly bucket: string,
    /** `<namespace>.` or nothing: the first token of every key. */
    private readonly keyPrefix: string,
    private readonly log: Logger,
  ) {}

  /** Opens the bucket, creating it when missing. `windowMs` bounds how long an idle key is kept. */
  static async open(
    nc: NatsConnection,
    options: { namespace?: string; windowMs: number; log: Logger },
  ): Promise<NatsRateLimitCounters> {
    const bucket = RATE_LIMIT_BUCKET;
    const setup = await jetstreamManager(nc, { timeout: 5000 });
    const config: Partial<StreamConfig> & { name: string } = {
      name: `KV_${bucket}`,
      subjects: [`$KV.${bucket}.>`],
      max_msgs_per_subject: 1,
      discard: DiscardPolicy.New,
      allow_rollup_hdrs: true,
      deny_delete: true,
      allow_direct: true,
      max_age: nanos(2 * options.windowMs),
      storage: StorageType.Memory,
      num_replicas: 1,
    };
    try {
      await setup.streams.info(config.name);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.code !== STREAM_NOT_FOUND) throw err;
      await setup.streams.add(config);
    }
    return new NatsRateLimitCounters(
      jetstream(nc, { timeout: CALL_TIMEOUT_MS }),
      await jetstreamManager(nc, { timeout: CALL_TIMEOUT_MS, checkAPI: false }),
      bucket,
      options.namespace ? `${options.namespace}.` : '',
      options.log,
    );
  }

  /** The bucket's name on the server. */
  get bucketName(): string {
    return this.bucket;
  }

  async incr(key: string, windowMs: number, max: number): Promise<WindowCount> {
    const now = Date.now();
    if (now < this.natsAfter) return this.fallback.incr(key, windowMs);
    try {
      // Requests queued behind one that found NATS gone do not each wait for their own timeout.
      const counted = await this.perKey.run(key, async () =>
        Date.now() < this.natsAfter ? null : this.incrShared(key, windowMs, max),
      );
      if (counted === null) return this.fallback.incr(key, windowMs);
      if (this.natsAfter !== 0) {
        this.natsAfter = 0;
        this.log.info({ bucket: this.bucket }, 'rate limits shared through NATS again');
      }
      return counted;
    } catch (err) {
      // Other replicas kept winning the key: this request is counted here, NATS is not to blame.
      if (err instanceof Contended) return this.fallback.incr(key, windowMs);
      if (this.natsAfter === 0)
        this.log.warn({ err, bucket: this.bucket }, 'rate limits counted per replica while NATS does not answer');
      this.natsAfter = Date.now() + RETRY_NATS_AFTER_MS;
      return this.fallback.incr(key, windowMs);
    }
  }

  private async incrShared(key: string, windowMs: number, max: number): Promise<WindowCount> {
    const now = Date.now();
    const subject = `$KV.${this.bucket}.${this.keyPrefix}${Buffer.from(key).toString('base64url')}`;
    let known: Seen | null | undefined = this.seen.get(key);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (known === undefined) known = await this.read(subject);
      const live = known !== null && known.start + windowMs > now;
      if (live && known!.count >= max) return { current: known!.count + 1, ttl: known!.start + windowMs - now };
      const next = live ? { start: known!.start, count: known!.count + 1 } : { start: now, count: 1 };
      try {
        const ack = await this.js.publish(subject, JSON.stringify(next), {
          expect: { lastSubjectSequence: known?.rev ?? 0 },
        });
        this.remember(key, { ...next, rev: ack.seq });
        return { current: next.count, ttl: Math.max(0, next.start + windowMs - now) };
      } catch (err) {
        if (!(err instanceof JetStreamApiError) || err.code !== WRONG_LAST_SEQUENCE) throw err;
        // Another replica counted first: read its count and try again, after a pause that breaks the lockstep.
        known = undefined;
        await sleep(Math.random() * (attempt + 1));
      }
    }
    throw new Contended(key);
  }

  private async read(subject: string): Promise<Seen | null> {
    const stored = await this.jsm.streams.getMessage(`KV_${this.bucket}`, { last_by_subj: subject });
    if (!stored) return null;
    const value = stored.json<{ start?: unknown; count?: unknown }>();
    if (typeof value.start !== 'number' || typeof value.count !== 'number')
      return { start: 0, count: 0, rev: stored.seq };
    return { start: value.start, count: value.count, rev: stored.seq };
  }

  private remember(key: string, seen: Seen): void {
    this.seen.delete(key);
    if (this.seen.size >= MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(key, seen);
  }
}
