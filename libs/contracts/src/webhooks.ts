import { z } from 'zod';
import { examples } from './examples';
import { isoDateTime, commaList, page, pageQuery, single } from './common';

/** Most webhook endpoints an account may register. */
export const MAX_WEBHOOK_ENDPOINTS = 20;

/** The event types clients see, in the feed and in webhook deliveries (stable names). */
export const eventTypes = [
  'listing.created',
  'listing.updated',
  'listing.deleted',
  'media.ready',
  'media.failed',
  'job.completed',
  'lead.created',
  'lead.updated',
  'lead.assigned',
  'lead.status_changed',
  'activity.created',
] as const;
export const eventType = z.enum(eventTypes);
export type EventType = z.infer<typeof eventType>;

/** Sent by `POST /v1/webhooks/:id/test` only; never in the feed. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * What the feed returns and what a webhook delivery's body carries. `data` is the resource as its
 * `GET` returns it (a deleted listing: `{ id, deleted: true, version }`).
 */
export const eventEnvelope = z
  .object({
    id: z.string().describe('Stable event id; also the `webhook-id` header of its deliveries (de-duplicate on it)'),
    type: z.union([eventType, z.literal(TEST_EVENT_TYPE)]),
    createdAt: z.string().describe('When the change happened'),
    accountId: z.string(),
    data: z.record(z.string(), z.unknown()).describe('The resource as `GET` returns it, with its `version`'),
  })
  .meta({ id: 'Event' });
export type EventEnvelope = z.infer<typeof eventEnvelope>;

export const eventFeedQuery = z.strictObject({
  after: single(z.string().max(512).optional()).describe(
    'The `nextCursor` of the previous page; absent or empty starts at the oldest event kept (30 days)',
  ),
  types: commaList(eventType).describe('Only these event types (comma list)'),
  limit: pageQuery.limit,
});
export type EventFeedQuery = z.infer<typeof eventFeedQuery>;

export const eventFeedPage = z
  .object({
    items: z.array(eventEnvelope),
    nextCursor: z.string().describe('Never null: poll again with it; an empty page means the reader is up to date'),
  })
  .meta({ id: 'EventFeedPage' });
export type EventFeedPage = z.infer<typeof eventFeedPage>;

/** Event types, or `["*"]` alone: one option each, so the document says so too (`anyOf`). */
const subscribedEvents = z
  .union([z.array(eventType).min(1).max(eventTypes.length), z.tuple([z.literal('*')])])
  .describe('Event types to receive, or `["*"]` (alone) for all');

const webhookUrl = z.url({ protocol: /^https?$/, error: 'must be an https URL' }).max(2048);

export const webhookCreate = z
  .strictObject({
    url: webhookUrl.describe('https only; private, loopback and link-local targets are refused'),
    events: subscribedEvents,
    description: z.string().trim().max(500).optional(),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'WebhookCreate', examples: [examples.webhookCreate] });
export type WebhookCreate = z.infer<typeof webhookCreate>;

/** JSON merge patch of an endpoint; re-enabling a disabled endpoint clears its failure record. */
export const webhookPatch = z
  .strictObject({
    url: webhookUrl.optional(),
    events: subscribedEvents.optional(),
    description: z.string().trim().max(500).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'WebhookPatch', examples: [examples.webhookPatch] });
export type WebhookPatch = z.infer<typeof webhookPatch>;

export const webhookStates = ['active', 'failing', 'target_refused', 'disabled'] as const;

export const webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    state: z
      .enum(webhookStates)
      .describe(
        '`active`; `failing` (the last attempt failed); `target_refused` (the last attempt was refused before connecting: the target is http, private, loopback or link-local and the server does not allow it, see `lastError`); `disabled`',
      ),
    lastError: z.string().nullable().describe("Why the endpoint's last attempt failed; null once an attempt succeeds"),
    disabledReason: z
      .string()
      .nullable()
      .describe('Why the service disabled the endpoint (failing for 5 days); null when enabled or disabled by a user'),
    failingSince: z.string().nullable().describe('First failed attempt since the last success'),
    secretPrefix: z.string().describe('The first characters of the signing secret, to tell secrets apart'),
    previousSecretPrefix: z
      .string()
      .nullable()
      .describe(
        'After a rotation, the first characters of the secret it replaced, while deliveries still carry its signature',
      ),
    previousSecretExpiresAt: isoDateTime
      .nullable()
      .describe(
        'Until then deliveries carry two signatures, by the new secret and by the one it replaced (`v1,<new> v1,<old>`); null when there is only one',
      ),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof webhook>;

export const webhookWithSecret = webhook
  .extend({
    secret: z
      .string()
      .optional()
      .describe(
        '`whsec_` + base64: the Standard Webhooks signing secret, shown only this once (left out when an Idempotency-Key replays the answer)',
      ),
  })
  .meta({ id: 'WebhookWithSecret' });
export type WebhookWithSecret = z.infer<typeof webhookWithSecret>;

export const webhookPage = page(webhook).meta({ id: 'WebhookPage' });
export const webhookListQuery = z.strictObject({ ...pageQuery });
export type WebhookListQuery = z.infer<typeof webhookListQuery>;

export const deliveryStates = ['pending', 'succeeded', 'failed'] as const;
export const deliveryState = z.enum(deliveryStates);
export type DeliveryState = z.infer<typeof deliveryState>;

export const delivery = z
  .object({
    id: z.string(),
    webhookId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    state: deliveryState,
    attempts: z.number().int(),
    lastStatusCode: z.number().int().nullable().describe('HTTP status of the last attempt; null when none answered'),
    lastError: z.string().nullable().describe('Why the last attempt failed, when it did'),
    lastResponseTimeMs: z.number().int().nullable(),
    lastAttemptAt: isoDateTime.nullable(),
    nextAttemptAt: isoDateTime.nullable().describe('When it is tried next; null once succeeded or failed'),
    createdAt: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });
export type Delivery = z.infer<typeof delivery>;

export const deliveryPage = page(delivery).meta({ id: 'WebhookDeliveryPage' });
export const deliveryListQuery = z.strictObject({
  ...pageQuery,
  state: commaList(deliveryState).describe('Only deliveries in these states'),
});
export type DeliveryListQuery = z.infer<typeof deliveryListQuery>;

export const deliveryParams = z.object({ id: z.string().min(1).max(64), deliveryId: z.string().min(1).max(200) });
