import type { Identity } from '@estate/contracts/accounts';

interface Entry {
  who: Identity;
  expiresAt: number;
}

/**
 * Live API keys seen lately, by the sha256 of their secret, so that the gateway does not read the
 * store on every request. Entries live briefly (`ttlMs`); a revocation evicts a key at once. Only
 * live keys are cached: an unknown key always reaches the store, so guessing cannot fill memory.
 */
export class ApiKeyCache {
  private readonly byHash = new Map<string, Entry>();
  /** Bumped by every eviction: a lookup that started before one must not cache what it read. */
  private epoch = 0;

  constructor(
    private readonly options: {
      ttlMs: number;
      maxEntries?: number;
      now?: () => number;
      /**
       * True when the keys may have changed where no revocation event tells (another process wrote the store, as
       * the CLI does on the embedded data folder): asked on every lookup; the whole cache is dropped then.
       */
      changedElsewhere?: () => boolean;
    },
  ) {}

  get enabled(): boolean {
    return this.options.ttlMs > 0;
  }

  /** Taken before reading the store; hand it to `put` so a revocation in between wins. */
  get generation(): number {
    return this.epoch;
  }

  get(hash: string): Identity | undefined {
    if (this.options.changedElsewhere?.()) {
      this.epoch++;
      this.byHash.clear();
      return undefined;
    }
    const entry = this.byHash.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.byHash.delete(hash);
      return undefined;
    }
    return entry.who;
  }

  put(hash: string, who: Identity, generation: number): void {
    if (!this.enabled || generation !== this.epoch) return;
    const max = this.options.maxEntries ?? 10_000;
    // Map keeps insertion order: the oldest entry goes first.
    if (this.byHash.size >= max) this.byHash.delete(this.byHash.keys().next().value as string);
    this.byHash.set(hash, { who, expiresAt: this.now() + this.options.ttlMs });
  }

  /** Forgets every cached entry of the key (a revoked key has one secret, but its hash is not in the event). */
  evictKey(keyId: string): void {
    this.epoch++;
    for (const [hash, entry] of this.byHash) if (entry.who.keyId === keyId) this.byHash.delete(hash);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
