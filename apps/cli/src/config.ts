import { envPort, parseEnv } from '@estate/platform/config';
import { z } from 'zod';

const schema = z.object({
  DATA_DIR: z.string().min(1).default('./data'),
  MONGODB_URL: z.string().url().optional(),
  GATEWAY_MONGODB_DATABASE: z.string().min(1).default('estate_gateway'),
  LISTINGS_MONGODB_DATABASE: z.string().min(1).default('estate_listings'),
  LEADS_MONGODB_DATABASE: z.string().min(1).default('estate_leads'),
  ELASTICSEARCH_URL: z.string().url().optional(),
  ELASTICSEARCH_INDEX: z.string().min(1).default('estate-listings'),
});

/** With MONGODB_URL the CLI works on the distributed profile's database; otherwise on DATA_DIR. */
export type CliTarget =
  | { kind: 'embedded'; dataDir: string }
  | {
      kind: 'distributed';
      mongodbUrl: string;
      database: string;
      listingsDatabase: string;
      leadsDatabase: string;
      elasticsearchUrl?: string;
      elasticsearchIndex: string;
    };

export function loadTarget(env: NodeJS.ProcessEnv): CliTarget {
  const e = parseEnv(schema, env);
  return e.MONGODB_URL
    ? {
        kind: 'distributed',
        mongodbUrl: e.MONGODB_URL,
        database: e.GATEWAY_MONGODB_DATABASE,
        listingsDatabase: e.LISTINGS_MONGODB_DATABASE,
        leadsDatabase: e.LEADS_MONGODB_DATABASE,
        elasticsearchUrl: e.ELASTICSEARCH_URL,
        elasticsearchIndex: e.ELASTICSEARCH_INDEX,
      }
    : { kind: 'embedded', dataDir: e.DATA_DIR };
}

const apiSchema = z.object({ HOST: z.string().min(1).default('127.0.0.1'), PORT: envPort(3000) });

/** Where the product listens when started with the same environment (`webhooks listen` reads its feed there). */
export function loadApiUrl(env: NodeJS.ProcessEnv): string {
  const e = parseEnv(apiSchema, env);
  const host = e.HOST === '0.0.0.0' || e.HOST === '::' ? '127.0.0.1' : e.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${e.PORT}`;
}

const feedsApiSchema = z.object({
  ESTATE_API_URL: z.string().url().optional(),
  ESTATE_API_KEY: z.string().min(1).optional(),
});

/** The API and key `feeds` commands use: ESTATE_API_URL (else HOST/PORT) and ESTATE_API_KEY (else one of its own). */
export function loadFeedsApi(env: NodeJS.ProcessEnv): { url: string; key?: string } {
  const e = parseEnv(feedsApiSchema, { ...env, ESTATE_API_KEY: env.ESTATE_API_KEY || undefined });
  return { url: e.ESTATE_API_URL ?? loadApiUrl(env), ...(e.ESTATE_API_KEY ? { key: e.ESTATE_API_KEY } : {}) };
}
