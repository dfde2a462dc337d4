import pino from 'pino';
import { composeEmbedded, type EmbeddedProduct } from '../src/compose';
import type { EmbeddedConfig } from '../src/config';

const log = pino({ level: 'silent' });

/** The embedded product on a data folder, with quiet logs and a generous rate limit unless told otherwise. */
export function startEmbedded(dataDir: string, over: Partial<EmbeddedConfig> = {}): Promise<EmbeddedProduct> {
  return composeEmbedded(
    { port: 0, host: '127.0.0.1', dataDir, rateLimitPerMinute: 1000, logLevel: 'silent', ...over },
    log,
  );
}
