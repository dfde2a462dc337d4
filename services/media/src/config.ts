import { loadServiceConfig, type ServiceProcessConfig } from '@estate/platform/process';

export const MEDIA_DEFAULT_PORT = 3002;

/** The only place the media process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceProcessConfig {
  return loadServiceConfig('media', MEDIA_DEFAULT_PORT, env);
}
