import { z } from 'zod';
import { commaList, isoDateTime, page, pageQuery } from '../common';
import { entityId } from './common';
import { examples } from '../examples';

/** Activities clients (and other services, over the bus) record. */
export const clientActivityTypes = ['email', 'call', 'property_view', 'form_submission', 'note', 'custom'] as const;
/** Activities only the leads service records. */
export const systemActivityTypes = ['status_change', 'assignment', 'score_change', 'inquiry'] as const;
export const activityTypes = [...clientActivityTypes, ...systemActivityTypes] as const;
export const activityType = z.enum(activityTypes);
export type ActivityType = z.infer<typeof activityType>;

export const activityActor = z.object({
  type: z.enum(['api_key', 'service', 'system']),
  id: z.string().nullable().describe('The API key id, or the publishing service'),
  agentId: z.string().nullable(),
});
export type ActivityActor = z.infer<typeof activityActor>;

export const activitySummary = z
  .object({
    id: z.string(),
    type: activityType,
    customType: z.string().nullable(),
    occurredAt: z.string(),
    summary: z.string().nullable(),
    listingId: z.string().nullable(),
  })
  .meta({ id: 'ActivitySummary' });
export type ActivitySummary = z.infer<typeof activitySummary>;

export const activity = activitySummary
  .extend({
    leadId: z.string(),
    data: z.record(z.string(), z.unknown()).nullable(),
    actor: activityActor,
    recordedAt: z.string(),
  })
  .meta({ id: 'Activity' });
export type Activity = z.infer<typeof activity>;

/** Largest `data` of an activity, as JSON bytes; more is 413. */
export const ACTIVITY_DATA_MAX_BYTES = 16 * 1024;

const activityInputShape = {
  occurredAt: isoDateTime.optional().describe('When it happened (default now); the timeline is ordered by it'),
  summary: z.string().trim().max(2000).optional(),
  data: z.record(z.string(), z.unknown()).optional().describe('Any JSON object, at most 16 KB'),
  listingId: entityId.optional(),
};

/** `customType` goes with type `custom` and only with it: one option per case, so the document says so (`oneOf`). */
const activityInput = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('custom'),
    customType: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required with type custom' : undefined) })
      .trim()
      .min(1)
      .max(64)
      .describe('What kind of custom activity this is'),
    ...activityInputShape,
  }),
  z.strictObject({
    type: z
      .enum(clientActivityTypes)
      .exclude(['custom'])
      .describe('The system records `status_change`, `assignment`, `score_change` and `inquiry` itself'),
    customType: z.never({ error: 'is only allowed with type custom' }).optional(),
    ...activityInputShape,
  }),
]);

export const activityCreate = activityInput.meta({ id: 'ActivityCreate', examples: [examples.activityCreate] });
export type ActivityCreate = z.infer<typeof activityCreate>;

export const activityQuery = z.strictObject({
  ...pageQuery,
  type: commaList(activityType),
});
export type ActivityQuery = z.infer<typeof activityQuery>;

export const activityPage = page(activity).meta({ id: 'ActivityPage' });

/** The activity of a `leads.activity.record` command: what a client would POST. */
export const activityCommandBody = activityInput;
