import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { ConfigError } from '../config';

/**
 * On SIGTERM/SIGINT (or a fatal error): run `close` once (stop accepting, finish in-flight
 * requests and messages, close stores), then exit. A second signal or the delay forces exit.
 */
export function closeOnSignals(log: Logger, close: () => Promise<void>, delayMs = 15_000): void {
  closeWithGrace({ delay: delayMs }, async ({ signal, err }) => {
    if (err) log.fatal({ err }, 'fatal error; shutting down');
    else log.info({ signal }, 'shutting down');
    await close();
    log.info('stopped');
  });
}

/** The one way a process that failed to start ends: a configuration problem as a plain message, anything else with its stack; exit 1. */
export function exitOnStartFailure(err: unknown): never {
  const message =
    err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`Failed to start: ${message}\n`);
  process.exit(1);
}
export * from './wait-for';
export * from './listening';
