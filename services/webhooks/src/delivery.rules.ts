/** About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (the Standard Webhooks schedule): eight attempts in all. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((s) => s * 1000);

/** An endpoint failing this long without a success is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/** A receiver has this long to answer 2xx. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** `5000,300000` -> [5000, 300000]; null when it is not such a list. */
export function parseRetrySchedule(raw: string): number[] | null {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d{1,10}$/.test(p))) return null;
  return parts.map(Number);
}

export type AttemptOutcome = { state: 'succeeded' } | { state: 'pending'; nextAttemptAt: Date } | { state: 'failed' };

/** What follows an attempt: success ends it; a failure waits the next delay, or gives up when none is left. */
export function afterAttempt(ok: boolean, attempts: number, now: Date, scheduleMs: readonly number[]): AttemptOutcome {
  if (ok) return { state: 'succeeded' };
  const delay = scheduleMs[attempts - 1];
  if (delay === undefined) return { state: 'failed' };
  return { state: 'pending', nextAttemptAt: new Date(now.getTime() + delay) };
}

/** A 2xx answer is success; redirects are not followed (the receiver must give its final URL). */
export const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

/** An endpoint failing since `failingSince` is disabled once this is true. */
export const shouldDisable = (failingSince: string | undefined, now: Date): boolean =>
  failingSince !== undefined && now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS;
