import { envUrl, parseEnv } from '@estate/platform/config';
import { loadServiceConfig, type ServiceProcessConfig } from '@estate/platform/process';
import { z } from 'zod';

export const LISTINGS_DEFAULT_PORT = 3001;

export interface ListingsProcessConfig extends ServiceProcessConfig {
  elasticsearchUrl: string;
  /** The alias the search index is reached through. */
  elasticsearchIndex: string;
}

const searchEnv = z.object({
  ELASTICSEARCH_URL: envUrl,
  ELASTICSEARCH_INDEX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,200}$/, 'must be a lower-case Elasticsearch index name')
    .default('estate-listings'),
});

/** The only place the listings process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): ListingsProcessConfig {
  const service = loadServiceConfig('listings', LISTINGS_DEFAULT_PORT, env);
  const search = parseEnv(searchEnv, env);
  return Object.freeze({ ...service, elasticsearchUrl: search.ELASTICSEARCH_URL, elasticsearchIndex: search.ELASTICSEARCH_INDEX });
}
