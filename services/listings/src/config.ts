import { loadServiceConfig, type ServiceProcessConfig } from '@estate/platform/process';

export const LISTINGS_DEFAULT_PORT = 3001;

/** The only place the listings process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceProcessConfig {
  return loadServiceConfig('listings', LISTINGS_DEFAULT_PORT, env);
}
