import { z } from 'zod';
import { page, pageQuery } from './common';
import { examples } from './examples';

export const roles = ['admin', 'agent', 'integration'] as const;
export const role = z.enum(roles);
export type Role = z.infer<typeof role>;

/** Who is calling, as established by the gateway and carried to services in a signed header. */
export const identity = z.object({
  accountId: z.string(),
  keyId: z.string(),
  role: z.union([role, z.literal('platform')]),
  agentId: z.string().nullable(),
});
export type Identity = z.infer<typeof identity>;

const keyName = z.string().trim().min(1).max(100);

/** `agentId` goes with role `agent` and only with it: one option per case, so the document says so too (`oneOf`). */
export const apiKeyCreate = z
  .discriminatedUnion('role', [
    z.strictObject({
      name: keyName,
      role: z.literal('agent'),
      agentId: z
        .string({ error: (issue) => (issue.input === undefined ? 'is required for role agent' : undefined) })
        .trim()
        .min(1)
        .max(64)
        .describe(
          'The agent the key acts as, an active agent of the account. Deactivating or deleting the agent revokes the key',
        ),
    }),
    z.strictObject({
      name: keyName,
      role: z.enum(['admin', 'integration']),
      agentId: z.never({ error: 'is only allowed for role agent' }).optional(),
    }),
  ])
  .meta({ id: 'ApiKeyCreate', examples: [examples.apiKeyCreate] });
export type ApiKeyCreate = z.infer<typeof apiKeyCreate>;

export const apiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    role,
    agentId: z.string().nullable(),
    prefix: z.string().describe('The first characters of the secret, to recognise a key without revealing it'),
    createdAt: z.string(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof apiKey>;

export const apiKeyWithSecret = apiKey
  .extend({
    secret: z
      .string()
      .optional()
      .describe('Shown only in this answer; left out when an Idempotency-Key replays it (no secret is kept)'),
  })
  .meta({ id: 'ApiKeyWithSecret' });

export const apiKeyList = page(apiKey).meta({ id: 'ApiKeyList' });
export const apiKeyListQuery = z.strictObject({ ...pageQuery });
export type ApiKeyListQuery = z.infer<typeof apiKeyListQuery>;

export const accountCreate = z
  .strictObject({ name: z.string().trim().min(1).max(200) })
  .meta({ id: 'AccountCreate', examples: [examples.accountCreate] });
export const account = z.object({ id: z.string(), name: z.string(), createdAt: z.string() }).meta({ id: 'Account' });
export type Account = z.infer<typeof account>;
export const accountCreated = z.object({ account, adminKey: apiKeyWithSecret });

/**
 * Transient (core NATS, not stored) notification every gateway replica listens to: a revoked key
 * leaves every replica's key cache at once, not when its cache entry expires.
 */
export const API_KEY_REVOKED_SUBJECT = 'gateway.api-key.revoked';
export const apiKeyRevoked = z.object({ keyId: z.string(), accountId: z.string() });
export type ApiKeyRevoked = z.infer<typeof apiKeyRevoked>;
