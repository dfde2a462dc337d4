import { envLogLevel, envLogPretty, envPort, envPublicBaseUrl, envTrustProxy, parseEnv } from '@estate/platform/config';
import { z } from 'zod';

const schema = z.object({
  PORT: envPort(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  ADMIN_API_KEY: z.string().min(20, 'must be at least 20 characters').optional(),
  PLATFORM_API_KEY: z.string().min(20, 'must be at least 20 characters').optional(),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  LOG_LEVEL: envLogLevel,
  PUBLIC_BASE_URL: envPublicBaseUrl,
  TRUST_PROXY: envTrustProxy,
  LOG_PRETTY: envLogPretty,
  /** `1` lets webhook endpoints target http, private, loopback and link-local addresses (local development). */
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: z.enum(['0', '1']).default('0'),
  /** `1` lets feeds read from http, private and loopback sources (local development, a second local instance). */
  FEEDS_ALLOW_PRIVATE_SOURCES: z.enum(['0', '1']).default('0'),
  /** Delays between webhook attempts, milliseconds, comma-separated. */
  WEBHOOKS_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d{1,10}(,\d{1,10})*$/, 'must be a comma list of milliseconds, e.g. 5000,300000')
    .optional(),
  /** Hours a rotated-out webhook signing secret keeps signing beside the new one (default 24; 0: not at all). */
  WEBHOOKS_SECRET_OVERLAP_HOURS: z.coerce.number().min(0).max(168).optional(),
});

export interface EmbeddedConfig {
  port: number;
  host: string;
  dataDir: string;
  adminApiKey?: string;
  platformApiKey?: string;
  rateLimitPerMinute: number;
  /** Requests per minute per client address without a valid key (60 unless given). */
  anonymousRateLimitPerMinute?: number;
  logLevel: string;
  /** Where clients reach the API (PUBLIC_BASE_URL): URLs in answers and the document's server are absolute with it. */
  publicBaseUrl?: string;
  /** Proxies allowed to name the client (TRUST_PROXY): a hop count or addresses; none when unset. */
  trustProxy?: number | string[];
  /** Readable log lines (LOG_PRETTY); unset: readable on a terminal. */
  logPretty?: boolean;
  /** Webhook delivery settings (defaults: public https targets only, the standard retry schedule). */
  webhooks?: { allowPrivateTargets: boolean; retryScheduleMs?: number[]; secretOverlapMs?: number };
  /** Feed sources may be private hosts (FEEDS_ALLOW_PRIVATE_SOURCES). */
  feeds?: { allowPrivateSources: boolean };
  /** How long a request may take to arrive, headers and body (30 s unless given; tests shorten it). */
  requestTimeoutMs?: number;
}

export function loadConfig(env: NodeJS.ProcessEnv): EmbeddedConfig {
  const e = parseEnv(schema, env);
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    adminApiKey: e.ADMIN_API_KEY,
    platformApiKey: e.PLATFORM_API_KEY,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    anonymousRateLimitPerMinute: e.RATE_LIMIT_ANONYMOUS_PER_MINUTE,
    logLevel: e.LOG_LEVEL,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    trustProxy: e.TRUST_PROXY,
    logPretty: e.LOG_PRETTY,
    feeds: { allowPrivateSources: e.FEEDS_ALLOW_PRIVATE_SOURCES === '1' },
    webhooks: {
      allowPrivateTargets: e.WEBHOOKS_ALLOW_PRIVATE_TARGETS === '1',
      ...(e.WEBHOOKS_RETRY_SCHEDULE ? { retryScheduleMs: e.WEBHOOKS_RETRY_SCHEDULE.split(',').map(Number) } : {}),
      ...(e.WEBHOOKS_SECRET_OVERLAP_HOURS !== undefined
        ? { secretOverlapMs: e.WEBHOOKS_SECRET_OVERLAP_HOURS * 3_600_000 }
        : {}),
    },
  });
}
