import { configLoader, processConfig, serviceEnv } from '@estate/runtime';

/** The leads process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('leads', 3003).transform(processConfig);

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
