/**
 * Render slots shared between accounts by turns: at most `slots` tasks run at once, and a free
 * slot goes to the waiting account that started a task longest ago (an account new here first;
 * arrival order within one account). One account's long queue therefore holds up another
 * account's task by at most the tasks already running.
 *
 * An account holds at most `share` tasks (running or waiting) here. A task beyond that waits up to
 * `waitMs` for room and is then refused (`run` resolves false), so the caller hands it back to the
 * shared queue and takes the next one: the tasks a process holds are never all one account's.
 */
export class AccountTurns {
  private running = 0;
  /** Tasks waiting for a slot, per account. */
  private readonly waiting = new Map<string, Array<() => void>>();
  /** When each account holding tasks here last started one (a tick of `clock`); absent: never, or not lately. */
  private readonly lastTurn = new Map<string, number>();
  private clock = 0;
  /** Tasks each account holds here, running or waiting. */
  private readonly held = new Map<string, number>();
  private readonly roomWaiters = new Map<string, Array<() => void>>();

  constructor(
    private readonly slots: number,
    private readonly share: number,
  ) {
    if (!Number.isInteger(slots) || slots < 1) throw new Error(`slots must be a positive integer, not ${slots}`);
    if (!Number.isInteger(share) || share < 1) throw new Error(`share must be a positive integer, not ${share}`);
  }

  /** Tasks `account` holds here, running or waiting. */
  holding(account: string): number {
    return this.held.get(account) ?? 0;
  }

  /**
   * Runs `task` in `account`'s turn; resolves true once it has run (rejects as it does), or false
   * without running it when the account still held its share after `waitMs`.
   */
  async run(account: string, task: () => Promise<void>, waitMs: number): Promise<boolean> {
    // Counted before any await, so tasks arriving together cannot all slip under the share.
    if (this.holding(account) < this.share) this.held.set(account, this.holding(account) + 1);
    else if (!(await this.room(account, waitMs))) return false;
    try {
      await this.turn(account);
      try {
        await task();
      } finally {
        this.passOn();
      }
      return true;
    } finally {
      const left = this.holding(account) - 1;
      if (left > 0) this.held.set(account, left);
      else {
        this.held.delete(account);
        this.lastTurn.delete(account);
      }
      this.roomWaiters.get(account)?.shift()?.();
    }
  }

  /** Waits until `account` holds less than its share and counts the task in; false when `waitMs` passes first. */
  private async room(account: string, waitMs: number): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    while (this.holding(account) >= this.share) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
        const waiters = this.roomWaiters.get(account) ?? [];
        waiters.push(wake);
        this.roomWaiters.set(account, waiters);
        timer = setTimeout(resolve, left);
      });
      await woken;
      clearTimeout(timer);
      const waiters = this.roomWaiters.get(account);
      if (waiters) {
        const at = waiters.indexOf(wake);
        if (at >= 0) waiters.splice(at, 1);
        if (waiters.length === 0) this.roomWaiters.delete(account);
      }
    }
    this.held.set(account, this.holding(account) + 1);
    return true;
  }

  /** Resolves when `account` has a slot: at once when one is free and nobody waits, else in its turn. */
  private async turn(account: string): Promise<void> {
    if (this.running < this.slots && this.waiting.size === 0) {
      this.running++;
      this.lastTurn.set(account, ++this.clock);
      return;
    }
    await new Promise<void>((resolve) => {
      const queue = this.waiting.get(account);
      if (queue) queue.push(resolve);
      else this.waiting.set(account, [resolve]);
    });
  }

  /** A finished task hands its slot to the waiting account that started a task longest ago. */
  private passOn(): void {
    let next: string | undefined;
    for (const account of this.waiting.keys())
      if (next === undefined || (this.lastTurn.get(account) ?? 0) < (this.lastTurn.get(next) ?? 0)) next = account;
    if (next === undefined) {
      this.running--;
      return;
    }
    const queue = this.waiting.get(next)!;
    const wake = queue.shift()!;
    if (queue.length === 0) this.waiting.delete(next);
    this.lastTurn.set(next, ++this.clock);
    wake();
  }
}
