import { envLogLevel, envNatsNamespace, envPort, envSecret, envUrl, parseEnv } from '@estate/platform/config';
import { z } from 'zod';

const schema = z.object({
  PORT: envPort(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  MONGODB_URL: envUrl,
  MONGODB_DATABASE: z.string().min(1).default('estate_gateway'),
  NATS_URL: z.string().min(1),
  NATS_NAMESPACE: envNatsNamespace,
  LISTINGS_URL: envUrl.default('http://127.0.0.1:3001'),
  MEDIA_URL: envUrl.default('http://127.0.0.1:3002'),
  LEADS_URL: envUrl.default('http://127.0.0.1:3003'),
  INTERNAL_SIGNING_SECRET: envSecret(32),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  ADMIN_API_KEY: z.string().min(20, 'must be at least 20 characters').optional(),
  PLATFORM_API_KEY: z.string().min(20, 'must be at least 20 characters').optional(),
  LOG_LEVEL: envLogLevel,
});

export interface GatewayConfig {
  port: number;
  host: string;
  mongodbUrl: string;
  mongodbDatabase: string;
  natsUrl: string;
  natsNamespace?: string;
  upstreams: { listings: string; media: string; leads: string };
  signingSecret: string;
  rateLimitPerMinute: number;
  adminApiKey?: string;
  platformApiKey?: string;
  logLevel: string;
}

/** The only place the gateway process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const e = parseEnv(schema, env);
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    mongodbUrl: e.MONGODB_URL,
    mongodbDatabase: e.MONGODB_DATABASE,
    natsUrl: e.NATS_URL,
    natsNamespace: e.NATS_NAMESPACE,
    upstreams: { listings: e.LISTINGS_URL, media: e.MEDIA_URL, leads: e.LEADS_URL },
    signingSecret: e.INTERNAL_SIGNING_SECRET,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    adminApiKey: e.ADMIN_API_KEY,
    platformApiKey: e.PLATFORM_API_KEY,
    logLevel: e.LOG_LEVEL,
  });
}
