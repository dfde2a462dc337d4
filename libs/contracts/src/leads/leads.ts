import { z } from 'zod';
import { commaList, isoDateTime, mergePatchOf, page, pageQuery, single, sortParam } from '../common';
import { listingStatus, photoUrls, propertyType } from '../listings';
import { activitySummary } from './activities';
import { emailInput, emailOf, entityId, leadCaptureShape, phoneInput, tagsInput, text } from './common';
import { assignment } from './routing';
import { scoreBreakdown, scoreSources } from './scoring';
import { examples } from '../examples';

/** Open stages, in pipeline order; an agent's capacity counts the leads it holds in these. */
export const openLeadStatuses = ['new', 'contacted', 'qualified', 'showing', 'offer', 'under_contract'] as const;
export const leadStatuses = [...openLeadStatuses, 'closed_won', 'closed_lost', 'nurture'] as const;
export const leadStatus = z.enum(leadStatuses);
export type LeadStatus = z.infer<typeof leadStatus>;

function contactRequired(v: { email?: string | null; phone?: string | null }, ctx: z.RefinementCtx) {
  if (!v.email && !v.phone) ctx.addIssue({ code: 'custom', path: ['email'], message: 'email or phone is required' });
}

/** An email or a phone, or both: one option each, so the document says so too (`anyOf`). */
export const leadCapture = z
  .union([
    z.strictObject({
      ...leadCaptureShape,
      email: emailOf('email or phone is required'),
    }),
    z.strictObject({ ...leadCaptureShape, phone: leadCaptureShape.phone.unwrap() }),
  ])
  .meta({ id: 'LeadCapture', examples: [examples.leadCapture] });
export type LeadCapture = z.infer<typeof leadCapture>;

/** What a client may change on a lead; `PATCH` is a JSON merge patch over it. */
export const leadWritable = z
  .strictObject({
    name: text(200),
    email: emailInput.optional(),
    phone: phoneInput.optional(),
    status: leadStatus,
    agentId: entityId.optional().describe('Admins only; agents may not reassign'),
    score: z
      .number()
      .min(0)
      .max(100)
      .optional()
      .describe('A number sets a manual score the engine leaves alone; `null` hands the score back to the engine'),
    tags: tagsInput.optional(),
  })
  .superRefine(contactRequired);
export type LeadWritable = z.infer<typeof leadWritable>;

export const leadPatch = mergePatchOf(leadWritable).meta({ id: 'LeadPatch', examples: [examples.leadPatch] });
export type LeadPatch = z.infer<typeof leadPatch>;

/** What the leads service knows about a listing, from listing events (no call per lead). */
export const leadListingSummary = z
  .object({
    id: z.string(),
    status: listingStatus,
    propertyType,
    price: z.object({ listPrice: z.number(), currency: z.string() }),
    address: z.object({
      street: z.string(),
      unit: z.string().nullable().optional(),
      city: z.string(),
      stateOrProvince: z.string(),
      postalCode: z.string(),
      country: z.string(),
    }),
    primaryPhoto: z.object({ id: z.string(), urls: photoUrls }).nullable(),
    updatedAt: z.string(),
  })
  .meta({ id: 'LeadListingSummary' });
export type LeadListingSummary = z.infer<typeof leadListingSummary>;

export const lead = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable().describe('E.164'),
    source: z.string(),
    status: leadStatus,
    agentId: z.string().nullable(),
    assignment: assignment.nullable(),
    score: z.number(),
    scoreSource: z.enum(scoreSources),
    scoreBreakdown,
    tags: z.array(z.string()),
    propertyInterests: z.array(
      z.object({
        listingId: z.string(),
        note: z.string().nullable(),
        listing: leadListingSummary
          .nullable()
          .describe('null while the listing is unknown to the leads service, or deleted'),
      }),
    ),
    latestActivities: z
      .array(activitySummary)
      .describe('The newest few; the whole timeline is at /v1/leads/{id}/activities'),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastActivityAt: z.string(),
    version: z.number().int(),
  })
  .meta({ id: 'Lead', examples: [examples.lead] });
export type Lead = z.infer<typeof lead>;

export const autoRouteOutcomes = ['assigned', 'already_assigned', 'not_open', 'no_agent_available'] as const;

export const leadCaptured = lead
  .extend({
    duplicate: z
      .boolean()
      .describe(
        'true when the person was already a lead of the account: that lead is returned, with the new inquiry on its timeline',
      ),
    routing: z
      .object({ outcome: z.enum(autoRouteOutcomes), detail: z.string() })
      .optional()
      .describe('With `autoRoute`: what routing did. A lead no agent could take is still captured, unassigned'),
  })
  .meta({ id: 'LeadCaptured' });
export type LeadCaptured = z.infer<typeof leadCaptured>;

/** What an integration key gets back from a capture: it writes leads but reads no pipeline. */
export const leadCaptureReceipt = z
  .object({
    id: z.string(),
    duplicate: z.boolean().describe('true when the person was already a lead of the account (the inquiry was added)'),
  })
  .meta({ id: 'LeadCaptureReceipt' });
export type LeadCaptureReceipt = z.infer<typeof leadCaptureReceipt>;

/** The answer to a capture: the lead for admins and agents, a receipt for integration keys. */
export const leadCaptureAnswer = z.union([leadCaptured, leadCaptureReceipt]);

/** An ISO 8601 date (the whole day) or date-time, for inclusive bounds. */
export const dateBound = z.union([z.iso.date(), isoDateTime], {
  error: 'must be an ISO 8601 date (2024-05-01) or date-time (2024-05-01T09:00:00Z)',
});

export const leadSortFields = ['score', 'createdAt', 'lastActivityAt'] as const;

export const leadSearchQuery = z.strictObject({
  ...pageQuery,
  sort: sortParam(leadSortFields),
  status: commaList(leadStatus),
  agentId: single(entityId.optional()).describe('An agent id, or `unassigned`'),
  createdFrom: single(dateBound.optional()),
  createdTo: single(dateBound.optional()),
  activityFrom: single(dateBound.optional()).describe('On `lastActivityAt`'),
  activityTo: single(dateBound.optional()),
  minScore: single(z.coerce.number().min(0).max(100).optional()),
  maxScore: single(z.coerce.number().min(0).max(100).optional()),
  source: commaList(text(100)),
  q: single(text(200).optional()).describe(
    'Words that start the name, email or phone (a word matches the start of any of them)',
  ),
  listingId: single(entityId.optional()).describe('Leads interested in this listing'),
});
export type LeadSearchQuery = z.infer<typeof leadSearchQuery>;

export const leadPage = page(lead).meta({ id: 'LeadPage' });

/** The lead as events carry it: no breakdown, no resolved listings, no timeline. */
export const leadEventView = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  source: z.string(),
  status: leadStatus,
  agentId: z.string().nullable(),
  score: z.number(),
  scoreSource: z.enum(scoreSources),
  tags: z.array(z.string()),
  propertyInterests: z.array(z.object({ listingId: z.string(), note: z.string().nullable() })),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastActivityAt: z.string(),
  version: z.number().int(),
});
export type LeadEventView = z.infer<typeof leadEventView>;
