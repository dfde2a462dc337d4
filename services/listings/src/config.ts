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
    /** `1` lets feeds read from http, private and loopback sources (tests, local development). */
    FEEDS_ALLOW_PRIVATE_SOURCES: z.enum(['0', '1']).default('0'),
    /** Key that encrypts feeds' stored credentials; derived from INTERNAL_SIGNING_SECRET unless given. */
    FEEDS_SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  })
  .transform((e) => ({
    ...processConfig(e),
    elasticsearch: { url: e.ELASTICSEARCH_URL, index: e.ELASTICSEARCH_INDEX },
    mediaUrl: e.MEDIA_URL,
    feeds: {
      secretKey: e.FEEDS_SECRET_KEY ?? e.INTERNAL_SIGNING_SECRET,
      allowPrivateSources: e.FEEDS_ALLOW_PRIVATE_SOURCES === '1',
    },
  }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
