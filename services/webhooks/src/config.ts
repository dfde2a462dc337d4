import { envUrl } from '@estate/platform/config';
import { configLoader, processConfig, serviceEnv } from '@estate/runtime';
import { z } from 'zod';
import { parseRetrySchedule } from './delivery.rules';

/** The webhooks process's environment; this file is the only reader of it. */
export const configSchema = serviceEnv('webhooks', 3004)
  .extend({
    /** Where the resources are read from when an event does not carry them whole (leads, media). */
    MEDIA_URL: envUrl.default('http://127.0.0.1:3002'),
    LEADS_URL: envUrl.default('http://127.0.0.1:3003'),
    /** `1` lets endpoints target http, private, loopback and link-local addresses (tests, local development). */
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: z.enum(['0', '1']).default('0'),
    /** Delays between attempts, milliseconds, comma-separated (default about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
    WEBHOOKS_RETRY_SCHEDULE: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        if (raw === undefined) return undefined;
        const schedule = parseRetrySchedule(raw);
        if (!schedule)
          ctx.addIssue({ code: 'custom', message: 'must be a comma list of milliseconds, e.g. 5000,300000' });
        return schedule ?? undefined;
      }),
    /** How long a claimed delivery is held before another process may take it (after a crash). */
    WEBHOOKS_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).optional(),
    /** Deliveries sent at once by this process, and at once to one endpoint. */
    WEBHOOKS_CONCURRENCY: z.coerce.number().int().min(1).max(1024).optional(),
    WEBHOOKS_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional(),
    /** Hours a rotated-out signing secret keeps signing deliveries beside the new one (default 24; 0: not at all). */
    WEBHOOKS_SECRET_OVERLAP_HOURS: z.coerce.number().min(0).max(168).optional(),
    /** Key that encrypts the stored signing secrets; derived from INTERNAL_SIGNING_SECRET unless given. */
    WEBHOOKS_SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  })
  .transform((e) => ({
    ...processConfig(e),
    resources: { media: e.MEDIA_URL, leads: e.LEADS_URL },
    secretKey: e.WEBHOOKS_SECRET_KEY ?? e.INTERNAL_SIGNING_SECRET,
    webhooks: {
      allowPrivateTargets: e.WEBHOOKS_ALLOW_PRIVATE_TARGETS === '1',
      ...(e.WEBHOOKS_RETRY_SCHEDULE ? { retryScheduleMs: e.WEBHOOKS_RETRY_SCHEDULE } : {}),
      ...(e.WEBHOOKS_LEASE_MS ? { leaseMs: e.WEBHOOKS_LEASE_MS } : {}),
      ...(e.WEBHOOKS_CONCURRENCY ? { concurrency: e.WEBHOOKS_CONCURRENCY } : {}),
      ...(e.WEBHOOKS_ENDPOINT_CONCURRENCY ? { endpointConcurrency: e.WEBHOOKS_ENDPOINT_CONCURRENCY } : {}),
      ...(e.WEBHOOKS_SECRET_OVERLAP_HOURS !== undefined
        ? { secretOverlapMs: e.WEBHOOKS_SECRET_OVERLAP_HOURS * 3_600_000 }
        : {}),
    },
  }));

export type Config = ReturnType<typeof loadConfig>;
export const loadConfig = configLoader(configSchema);
