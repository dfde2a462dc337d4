import { parseEnv } from '@estate/platform/config';
import { loadServiceConfig, type ServiceProcessConfig } from '@estate/platform/process';
import { z } from 'zod';
import type { MediaOptions } from './compose';

export const MEDIA_DEFAULT_PORT = 3002;

export interface MediaProcessConfig extends ServiceProcessConfig {
  media: Partial<MediaOptions>;
}

const mediaEnv = z.object({
  MEDIA_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  MEDIA_MAX_MEGAPIXELS: z.coerce.number().positive().max(1000).optional(),
});

/** The only place the media process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): MediaProcessConfig {
  const e = parseEnv(mediaEnv, env);
  return Object.freeze({
    ...loadServiceConfig('media', MEDIA_DEFAULT_PORT, env),
    media: {
      ...(e.MEDIA_WORKERS ? { workers: e.MEDIA_WORKERS } : {}),
      ...(e.MEDIA_MAX_MEGAPIXELS ? { maxPixels: Math.round(e.MEDIA_MAX_MEGAPIXELS * 1e6) } : {}),
    },
  });
}
