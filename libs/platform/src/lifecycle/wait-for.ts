import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logging';

export interface WaitOptions {
  /** First pause between attempts; doubled after each failure up to `maxDelayMs`. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  /** Give up (rethrow the last error) after this long; waits for ever when absent. */
  timeoutMs?: number;
  /** Errors that retrying cannot fix (bad configuration): thrown at once. */
  isPermanent?: (err: unknown) => boolean;
}

/**
 * Connects to an engine the process needs, waiting for it with exponential backoff when it is not there yet
 * (a service may start before its engines: containers, a machine rebooting). One log line per failed attempt,
 * with the reason and no stack trace.
 */
export async function waitFor<T>(
  what: string,
  connect: () => Promise<T>,
  log: Logger,
  opts: WaitOptions = {},
): Promise<T> {
  const started = Date.now();
  let delay = opts.firstDelayMs ?? 250;
  for (let attempt = 1; ; attempt++) {
    try {
      const connected = await connect();
      if (attempt > 1) log.info({ dependency: what, attempts: attempt }, `${what} is available`);
      return connected;
    } catch (err) {
      if (opts.isPermanent?.(err)) throw err;
      if (opts.timeoutMs !== undefined && Date.now() - started + delay > opts.timeoutMs) throw err;
      log.warn(
        { dependency: what, attempt, retryInMs: delay, reason: err instanceof Error ? err.message : String(err) },
        `waiting for the ${what}`,
      );
      await sleep(delay);
      delay = Math.min(delay * 2, opts.maxDelayMs ?? 5000);
    }
  }
}
