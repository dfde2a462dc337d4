import { loadServiceConfig, type ServiceProcessConfig } from '@estate/platform/process';

export const LEADS_DEFAULT_PORT = 3003;

/** The only place the leads process reads its environment. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceProcessConfig {
  return loadServiceConfig('leads', LEADS_DEFAULT_PORT, env);
}
