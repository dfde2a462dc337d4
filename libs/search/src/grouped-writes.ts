/** One caller's part of a grouped request: its operations, and how it learns its own outcome. */
interface Waiting<Op> {
  ops: Op[];
  settle: (err?: Error) => void;
}

/**
 * Writes that go out together: while one request is in flight, the writes that arrive wait and leave as the next
 * request, whole, up to `maxOps` operations each. A write made while nothing is in flight leaves at once, so a lone
 * writer waits no longer than before; under load the requests per second stay bounded by the engine's answer time
 * instead of growing with the writers. `send` answers each group member's outcome (undefined: written); a request
 * that fails as a whole fails every member of it.
 */
export class GroupedWrites<Op> {
  private readonly waiting: Waiting<Op>[] = [];
  private sending = false;

  constructor(
    private readonly send: (groups: Op[][]) => Promise<Array<Error | undefined>>,
    private readonly maxOps: number,
  ) {}

  write(ops: Op[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ ops, settle: (err) => (err ? reject(err) : resolve()) });
      if (!this.sending) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.takeGroup();
        try {
          const outcomes = await this.send(group.map((w) => w.ops));
          group.forEach((w, i) => w.settle(outcomes[i]));
        } catch (err) {
          for (const w of group) w.settle(err instanceof Error ? err : new Error(String(err)));
        }
      }
    } finally {
      this.sending = false;
    }
  }

  /** The oldest waiting writes, as many as fit in `maxOps` (always at least one). */
  private takeGroup(): Waiting<Op>[] {
    let ops = this.waiting[0].ops.length;
    let n = 1;
    while (n < this.waiting.length && ops + this.waiting[n].ops.length <= this.maxOps)
      ops += this.waiting[n++].ops.length;
    return this.waiting.splice(0, n);
  }
}
