import { envUrl } from '@estate/platform/config';
import { configLoader, processConfig, serviceEnv } from '@estate/runtime';

/** The leads process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('leads', 3003)
  .extend({
    /** The listings service, asked about a listing a capture names whose event has not arrived yet. */
    LISTINGS_URL: envUrl.default('http://127.0.0.1:3001'),
  })
  .transform((e) => ({ ...processConfig(e), listingsUrl: e.LISTINGS_URL }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
