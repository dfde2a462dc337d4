import { envUrl } from '@estate/platform/config';
import { configLoader, processConfig, serviceEnv } from '@estate/runtime';
import { z } from 'zod';

const apiKey = z.string().min(20, 'must be at least 20 characters').optional();

/** The gateway process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('gateway', 3000)
  .extend({
    LISTINGS_URL: envUrl.default('http://127.0.0.1:3001'),
    MEDIA_URL: envUrl.default('http://127.0.0.1:3002'),
    LEADS_URL: envUrl.default('http://127.0.0.1:3003'),
    WEBHOOKS_URL: envUrl.default('http://127.0.0.1:3004'),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: z.coerce.number().int().min(1).default(60),
    ADMIN_API_KEY: apiKey,
    PLATFORM_API_KEY: apiKey,
    /** How long a live API key is trusted without a store read; revocations still reach every replica at once. */
    API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
  })
  .transform((e) => ({
    ...processConfig(e),
    upstreams: { listings: e.LISTINGS_URL, media: e.MEDIA_URL, leads: e.LEADS_URL, webhooks: e.WEBHOOKS_URL },
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    anonymousRateLimitPerMinute: e.RATE_LIMIT_ANONYMOUS_PER_MINUTE,
    keys: { adminKey: e.ADMIN_API_KEY, platformKey: e.PLATFORM_API_KEY },
    keyCacheMs: e.API_KEY_CACHE_MS,
  }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
