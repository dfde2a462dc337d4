/**
 * The nonces of signed requests seen in the last `maxAgeMs`, so that a captured request cannot be played
 * again. Memory is bounded: at `capacity` the oldest entry is dropped and its timestamp becomes a floor,
 * below which every request is refused (as if stale), so dropping an entry never lets its replay in.
 */
export class NonceCache {
  /** nonce -> expiry (signed timestamp + max age, ms); a Map keeps insertion order, close to expiry order. */
  private readonly seen = new Map<string, number>();
  private floorMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly maxAgeMs: number,
    private readonly capacity = 100_000,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  /**
   * Records a nonce signed at `timestampMs`. False when it was seen before (a replay) or when the request
   * is older than what the cache still remembers.
   */
  claim(nonce: string, timestampMs: number, now = Date.now()): boolean {
    this.sweep(now);
    if (timestampMs <= this.floorMs) return false;
    const expiry = this.seen.get(nonce);
    if (expiry !== undefined && expiry > now) return false;
    while (this.seen.size >= this.capacity) {
      const [oldest, oldestExpiry] = this.seen.entries().next().value as [string, number];
      this.seen.delete(oldest);
      this.floorMs = Math.max(this.floorMs, oldestExpiry - this.maxAgeMs);
    }
    this.seen.delete(nonce);
    // Held for as long as its timestamp is acceptable: after that the request is refused as stale anyway.
    this.seen.set(nonce, timestampMs + this.maxAgeMs);
    return true;
  }

  private sweep(now: number): void {
    for (const [nonce, expiry] of this.seen) {
      if (expiry > now) break;
      this.seen.delete(nonce);
    }
  }
}
