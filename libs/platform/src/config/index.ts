import { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses environment variables with a zod schema whose keys are the variable names.
 * A bad value throws a ConfigError naming each offending variable (never echoing its value,
 * which may be a secret). The result is frozen.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): Readonly<z.infer<S>> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  return Object.freeze(result.data) as Readonly<z.infer<S>>;
}

export const envPort = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
export const envLogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');
export const envSecret = (min = 32) => z.string().min(min, `must be at least ${min} characters`);
export const envUrl = z.string().url();
/** Optional prefix that keeps deployments sharing one NATS server apart (see NatsBus). */
export const envNatsNamespace = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')
  .optional();
/** Where clients reach the API, e.g. `https://api.example.com` (no trailing slash kept). */
export const envPublicBaseUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.example.com' })
  .transform((u) => u.replace(/\/+$/, ''))
  .optional();
/**
 * TRUST_PROXY: which proxies in front of the process may say who the client is (`X-Forwarded-For`), for the
 * client address the anonymous rate limit counts and the logs show. Unset: none, the TCP peer is the client. A
 * number: that many hops. Otherwise a comma list of addresses, CIDR ranges or `loopback`, `linklocal`,
 * `uniquelocal`.
 */
const PROXY_ENTRY = /^(loopback|linklocal|uniquelocal|[0-9a-fA-F.:]+(\/\d{1,3})?)$/;
export const envTrustProxy = z
  .string()
  .transform((v): number | string[] =>
    /^\d{1,2}$/.test(v.trim())
      ? Number(v)
      : v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0),
  )
  .refine((v) => typeof v === 'number' || (v.length > 0 && v.every((entry) => PROXY_ENTRY.test(entry))), {
    message: 'a hop count, or a comma list of addresses, CIDR ranges, loopback, linklocal or uniquelocal',
  })
  .optional();
/** LOG_PRETTY=1 for readable log lines, 0 for JSON; unset: readable on a terminal. */
export const envLogPretty = z
  .enum(['0', '1', 'true', 'false'])
  .transform((v) => v === '1' || v === 'true')
  .optional();
