import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The one way tests wait for something that happens in the background: runs `check` until it
 * returns without throwing (assert inside it) and resolves to its result; after `timeoutMs`
 * rethrows the last failure.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    await sleep(options.intervalMs ?? 50);
  }
}
