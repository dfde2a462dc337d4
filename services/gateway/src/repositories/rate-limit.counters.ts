import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

/** A key's fixed window after one more request: its count, and the milliseconds until the window ends. */
export interface WindowCount {
  current: number;
  ttl: number;
}

/** Requests per key per fixed window; one implementation per place the counts live. */
export interface RateLimitCounters {
  incr(key: string, windowMs: number, max: number): Promise<WindowCount>;
}

/** Counts in this process: the embedded profile's, and a shared store's stand-in while its engine is away. */
export class MemoryRateLimitCounters implements RateLimitCounters {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly maxKeys = 10_000) {}

  async incr(key: string, windowMs: number): Promise<WindowCount> {
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || window.start + windowMs <= now) {
      if (!window && this.windows.size >= this.maxKeys) this.prune(now, windowMs);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    window.count++;
    return { current: window.count, ttl: window.start + windowMs - now };
  }

  /** Drops ended windows, then the oldest keys if that was not enough. */
  private prune(now: number, windowMs: number): void {
    for (const [key, w] of this.windows) if (w.start + windowMs <= now) this.windows.delete(key);
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}

/** @fastify/rate-limit's store interface over a set of counters (the plugin constructs it; it is the same for every route). */
export function rateLimitStoreOf(counters: RateLimitCounters): FastifyRateLimitStoreCtor {
  class CountersStore {
    incr(key: string, done: (err: Error | null, result?: WindowCount) => void, windowMs: number, max: number): void {
      counters.incr(key, windowMs, max).then(
        (result) => done(null, result),
        (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
      );
    }
    child(): CountersStore {
      return this;
    }
  }
  return CountersStore as unknown as FastifyRateLimitStoreCtor;
}
