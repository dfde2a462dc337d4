/**
 * Runs tasks concurrently, at most `limit` at once, while tasks sharing a key run one after
 * another in the order they were given: what a consumer needs to keep up with a stream without
 * letting two events of one entity race each other.
 */
export class KeyedScheduler {
  private running = 0;
  private pending = 0;
  private readonly slots: (() => void)[] = [];
  private readonly roomWaiters: (() => void)[] = [];
  private readonly tails = new Map<string, Promise<void>>();
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`concurrency must be a positive integer, not ${limit}`);
  }

  /** Tasks given and not yet finished (waiting on their key, waiting for a slot, or running). */
  get size(): number {
    return this.pending;
  }

  /** Resolves once fewer than `limit` tasks are pending: a pulling consumer waits here before taking more. */
  async room(): Promise<void> {
    while (this.pending >= this.limit) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Resolves when every task given so far has finished. */
  async idle(): Promise<void> {
    while (this.pending > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Runs `task` after every earlier task of `key` has settled; settles as the task does. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    this.pending++;
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(() => this.inSlot(task));
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
      this.pending--;
      this.roomWaiters.shift()?.();
      if (this.pending === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    });
    return result;
  }

  private async inSlot<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its slot straight to the oldest waiter, so nobody overtakes it.
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((resolve) => this.slots.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.slots.shift();
      if (next) next();
      else this.running--;
    }
  }
}
