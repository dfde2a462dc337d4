import { envUrl } from '@estate/platform/config';
import { configLoader, processConfig, serviceEnv } from '@estate/runtime';
import { z } from 'zod';

/** The listings process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('listings', 3001)
  .extend({
    ELASTICSEARCH_URL: envUrl,
    /** The media service: the RESO Web API's `$expand=Media` reads galleries there. */
    MEDIA_URL: envUrl.default('http://127.0.0.1:3002'),
    /** The alias the search index is reached through. */
    ELASTICSEARCH_INDEX: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,200}$/, 'must be a lower-case Elasticsearch index name')
      .default('estate-listings'),
  })
  .transform((e) => ({
    ...processConfig(e),
    elasticsearch: { url: e.ELASTICSEARCH_URL, index: e.ELASTICSEARCH_INDEX },
    mediaUrl: e.MEDIA_URL,
  }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
