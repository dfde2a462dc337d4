import { randomBytes } from 'node:crypto';

const MS_DIGITS = 15;

/** The first position taken at `ms` or later: every position before it was taken earlier. */
export const positionAt = (ms: number): string => String(ms).padStart(MS_DIGITS, '0');

/**
 * Positions that sort in the order this process took them, and after every position any process took
 * at an earlier millisecond: the time (ms), a counter (strictly increasing, also when the clock
 * stands still or steps back) and the process's random tag (unique across replicas). No shared counter.
 */
export class SequenceClock {
  private lastMs = 0;
  private counter = 0;
  private readonly tag = randomBytes(4).toString('hex');

  next(now: Date): string {
    const ms = Math.max(now.getTime(), this.lastMs);
    this.counter = ms === this.lastMs ? this.counter + 1 : 0;
    this.lastMs = ms;
    return `${positionAt(ms)}.${String(this.counter).padStart(6, '0')}.${this.tag}`;
  }
}
