import { envUrl } from '@estate/platform/config';
import { configLoader, processConfig, serviceEnv } from '@estate/runtime';
import { z } from 'zod';

/** The media process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('media', 3002)
  .extend({
    /** The listings service, asked about a listing whose event has not arrived yet. */
    LISTINGS_URL: envUrl.default('http://127.0.0.1:3001'),
    /** Images rendered at once by this process. */
    MEDIA_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
    /** Largest image accepted, in megapixels. */
    MEDIA_MAX_MEGAPIXELS: z.coerce.number().positive().max(1000).optional(),
  })
  .transform((e) => ({
    ...processConfig(e),
    listingsUrl: e.LISTINGS_URL,
    media: {
      ...(e.MEDIA_WORKERS ? { workers: e.MEDIA_WORKERS } : {}),
      ...(e.MEDIA_MAX_MEGAPIXELS ? { maxPixels: Math.round(e.MEDIA_MAX_MEGAPIXELS * 1e6) } : {}),
    },
  }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
