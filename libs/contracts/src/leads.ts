import { z } from 'zod';
import { commaList, isoDateTime, mergePatchOf, page, pageQuery, single, sortParam } from './common';
import { listingStatus, photoUrls, propertyType } from './listings';

const text = (max: number) => z.string().trim().min(1).max(max);
const entityId = z.string().trim().min(1).max(64);

// ---------------------------------------------------------------------------------------------
// Pipeline, activities, strategies

/** Open stages, in pipeline order; an agent's capacity counts the leads it holds in these. */
export const openLeadStatuses = ['new', 'contacted', 'qualified', 'showing', 'offer', 'under_contract'] as const;
export const leadStatuses = [...openLeadStatuses, 'closed_won', 'closed_lost', 'nurture'] as const;
export const leadStatus = z.enum(leadStatuses);
export type LeadStatus = z.infer<typeof leadStatus>;

/** Activities clients (and other services, over the bus) record. */
export const clientActivityTypes = ['email', 'call', 'property_view', 'form_submission', 'note', 'custom'] as const;
/** Activities only the leads service records. */
export const systemActivityTypes = ['status_change', 'assignment', 'score_change', 'inquiry'] as const;
export const activityTypes = [...clientActivityTypes, ...systemActivityTypes] as const;
export const activityType = z.enum(activityTypes);
export type ActivityType = z.infer<typeof activityType>;

export const routingStrategies = ['round_robin', 'weighted', 'least_loaded', 'specific_agent'] as const;
export const routingStrategy = z.enum(routingStrategies);
export type RoutingStrategy = z.infer<typeof routingStrategy>;

/** How an assignment came about: a routing strategy, or an admin setting `agentId` by hand. */
export const assignmentStrategy = z.enum([...routingStrategies, 'manual']);

export const scoreSources = ['engine', 'manual'] as const;

// ---------------------------------------------------------------------------------------------
// Shared inputs

/** Trimmed and lowercased before it is checked. */
export const emailInput = z.string().trim().toLowerCase().max(254).pipe(z.email('must be an email address'));
/** Any common notation; the service normalises it to E.164 (without a country code: the account's region). */
export const phoneInput = z.string().trim().min(3).max(40).describe('Any common notation; stored in E.164');
const tagsInput = z.array(text(50)).max(50);

export const propertyInterestInput = z.strictObject({
  listingId: entityId,
  note: z.string().trim().max(1000).optional(),
});

// ---------------------------------------------------------------------------------------------
// Leads

const leadCaptureShape = {
  name: text(200),
  email: emailInput.optional(),
  phone: phoneInput.optional(),
  source: text(100).optional().describe('Free text such as "Zillow" or "Open house"; stored as a lowercase slug (`zillow`, `open-house`). Default `unknown`'),
  message: z.string().trim().max(5000).optional().describe('What the person asked; becomes the summary of the inquiry on the timeline'),
  propertyInterests: z.array(propertyInterestInput).max(20).optional(),
  tags: tagsInput.optional(),
  autoRoute: z.boolean().optional().describe('Route the lead to an agent right away (a duplicate already assigned keeps its agent)'),
};

function contactRequired(v: { email?: string | null; phone?: string | null }, ctx: z.RefinementCtx) {
  if (!v.email && !v.phone) ctx.addIssue({ code: 'custom', path: ['email'], message: 'email or phone is required' });
}

export const leadCapture = z.strictObject(leadCaptureShape).superRefine(contactRequired).meta({ id: 'LeadCapture' });
export type LeadCapture = z.infer<typeof leadCapture>;

/** What a client may change on a lead; `PATCH` is a JSON merge patch over it. */
export const leadWritable = z
  .strictObject({
    name: text(200),
    email: emailInput.optional(),
    phone: phoneInput.optional(),
    status: leadStatus,
    agentId: entityId.optional().describe('Admins only; agents may not reassign'),
    score: z.number().min(0).max(100).optional().describe('A number sets a manual score the engine leaves alone; `null` hands the score back to the engine'),
    tags: tagsInput.optional(),
  })
  .superRefine(contactRequired);
export type LeadWritable = z.infer<typeof leadWritable>;

export const leadPatch = mergePatchOf(leadWritable).meta({ id: 'LeadPatch' });
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

export const assignment = z
  .object({
    ruleId: z.string().nullable().describe('The routing rule that chose the agent; null for the team default or a manual assignment'),
    strategy: assignmentStrategy,
    reason: z.string(),
    assignedAt: z.string(),
  })
  .meta({ id: 'Assignment' });
export type Assignment = z.infer<typeof assignment>;

export const scoreComponentNames = ['contact', 'source', 'engagement', 'recency', 'interest'] as const;
export type ScoreComponentName = (typeof scoreComponentNames)[number];

const scoreComponent = z.object({
  weight: z.number().describe('Configured weight of this signal'),
  signal: z.number().describe('Strength of the signal, 0..1'),
  points: z.number().int().describe('Points this signal contributes; the points of all signals add up to `engineScore`'),
  detail: z.string(),
});

export const scoreBreakdown = z
  .object({
    engineScore: z.number().int().describe('What the engine computes; equals `score` unless the score is manual'),
    components: z.object(Object.fromEntries(scoreComponentNames.map((n) => [n, scoreComponent])) as Record<ScoreComponentName, typeof scoreComponent>),
    computedAt: z.string(),
  })
  .meta({ id: 'ScoreBreakdown' });
export type ScoreBreakdown = z.infer<typeof scoreBreakdown>;

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
      z.object({ listingId: z.string(), note: z.string().nullable(), listing: leadListingSummary.nullable().describe('null while the listing is unknown to the leads service, or deleted') }),
    ),
    latestActivities: z.array(activitySummary).describe('The newest few; the whole timeline is at /v1/leads/{id}/activities'),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastActivityAt: z.string(),
    version: z.number().int(),
  })
  .meta({ id: 'Lead' });
export type Lead = z.infer<typeof lead>;

export const autoRouteOutcomes = ['assigned', 'already_assigned', 'not_open', 'no_agent_available'] as const;

export const leadCaptured = lead
  .extend({
    duplicate: z.boolean().describe('true when the person was already a lead of the account: that lead is returned, with the new inquiry on its timeline'),
    routing: z
      .object({ outcome: z.enum(autoRouteOutcomes), detail: z.string() })
      .optional()
      .describe('With `autoRoute`: what routing did. A lead no agent could take is still captured, unassigned'),
  })
  .meta({ id: 'LeadCaptured' });
export type LeadCaptured = z.infer<typeof leadCaptured>;

/** An ISO 8601 date (the whole day) or date-time, for inclusive bounds. */
export const dateBound = z.union([z.iso.date(), isoDateTime], { error: 'must be an ISO 8601 date (2024-05-01) or date-time (2024-05-01T09:00:00Z)' });

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
  q: single(text(200).optional()).describe('Words that start the name, email or phone (a word matches the start of any of them)'),
  listingId: single(entityId.optional()).describe('Leads interested in this listing'),
});
export type LeadSearchQuery = z.infer<typeof leadSearchQuery>;

export const leadPage = page(lead).meta({ id: 'LeadPage' });

// ---------------------------------------------------------------------------------------------
// Activities

/** Largest `data` of an activity, as JSON bytes; more is 413. */
export const ACTIVITY_DATA_MAX_BYTES = 16 * 1024;

const activityInputShape = {
  type: z.enum(clientActivityTypes).describe('The system records `status_change`, `assignment`, `score_change` and `inquiry` itself'),
  customType: text(64).optional().describe('Required with type `custom`, not allowed otherwise'),
  occurredAt: isoDateTime.optional().describe('When it happened (default now); the timeline is ordered by it'),
  summary: z.string().trim().max(2000).optional(),
  data: z.record(z.string(), z.unknown()).optional().describe('Any JSON object, at most 16 KB'),
  listingId: entityId.optional(),
};

function customTypeGoesWithCustom(v: { type: string; customType?: string }, ctx: z.RefinementCtx) {
  if (v.type === 'custom' && !v.customType) ctx.addIssue({ code: 'custom', path: ['customType'], message: 'is required with type custom' });
  if (v.type !== 'custom' && v.customType) ctx.addIssue({ code: 'custom', path: ['customType'], message: 'is only allowed with type custom' });
}

export const activityCreate = z.strictObject(activityInputShape).superRefine(customTypeGoesWithCustom).meta({ id: 'ActivityCreate' });
export type ActivityCreate = z.infer<typeof activityCreate>;

export const activityQuery = z.strictObject({
  ...pageQuery,
  type: commaList(activityType),
});
export type ActivityQuery = z.infer<typeof activityQuery>;

export const activityPage = page(activity).meta({ id: 'ActivityPage' });

// ---------------------------------------------------------------------------------------------
// Agents

const booleanQuery = z.enum(['true', 'false']).transform((v) => v === 'true');

export const agentInput = z.strictObject({
  name: text(200),
  email: emailInput,
  phone: phoneInput.optional(),
  active: z.boolean().default(true).describe('Inactive agents are never routed to'),
  capacity: z.number().int().min(0).max(1000).default(25).describe('The most open leads the agent may hold; routing skips an agent at capacity'),
  areas: z.array(text(100)).max(500).default([]).describe('Postal codes or cities the agent covers (used by rules without agentIds)'),
});
export const agentCreate = agentInput.meta({ id: 'AgentCreate' });
export type AgentCreate = z.infer<typeof agentCreate>;
export const agentPatch = mergePatchOf(agentInput).meta({ id: 'AgentPatch' });
export type AgentPatch = z.infer<typeof agentPatch>;

export const agent = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    phone: z.string().nullable(),
    active: z.boolean(),
    capacity: z.number().int(),
    areas: z.array(z.string()),
    openLeads: z.number().int().describe('Open leads assigned to the agent now (live; not part of `version`)'),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof agent>;

export const agentListQuery = z.strictObject({ ...pageQuery, active: single(booleanQuery.optional()) });
export type AgentListQuery = z.infer<typeof agentListQuery>;
export const agentPage = page(agent).meta({ id: 'AgentPage' });

// ---------------------------------------------------------------------------------------------
// Routing

export const ruleConditions = z.strictObject({
  sources: z.array(text(100)).max(100).optional().describe('Lead sources (compared as slugs)'),
  propertyTypes: z.array(propertyType).max(20).optional().describe('Of the lead\'s first property interest'),
  minPrice: z.number().min(0).optional().describe('List price of the first property interest, inclusive'),
  maxPrice: z.number().min(0).optional(),
  postalCodes: z.array(text(20)).max(1000).optional().describe('The first interest\'s postal code is one of these, or its city one of `cities`'),
  cities: z.array(text(100)).max(1000).optional(),
  minScore: z.number().min(0).max(100).optional(),
});
export type RuleConditions = z.infer<typeof ruleConditions>;

const ruleWeights = z.record(entityId, z.number().int().min(0).max(100));

export const routingRuleInput = z.strictObject({
  name: text(200),
  priority: z.number().int().min(0).max(1_000_000).describe('Lower runs first'),
  enabled: z.boolean().default(true),
  conditions: ruleConditions.default({}).describe('All given conditions must hold; none given matches every lead'),
  strategy: routingStrategy,
  agentIds: z.array(entityId).max(200).default([]).describe('Candidate agents, in order; empty: the agents whose areas cover the lead\'s property'),
  weights: ruleWeights.optional().describe('Strategy `weighted`: share of each agent (default 1, 0 never)'),
});

function ruleConsistent(v: z.infer<typeof routingRuleInput>, ctx: z.RefinementCtx) {
  const c = v.conditions;
  if (c.minPrice !== undefined && c.maxPrice !== undefined && c.minPrice > c.maxPrice) {
    ctx.addIssue({ code: 'custom', path: ['conditions', 'minPrice'], message: 'must not be above maxPrice' });
  }
  if (v.strategy === 'specific_agent' && v.agentIds.length === 0) ctx.addIssue({ code: 'custom', path: ['agentIds'], message: 'must name at least one agent for strategy specific_agent' });
  if (v.weights && v.strategy !== 'weighted') ctx.addIssue({ code: 'custom', path: ['weights'], message: 'only apply to strategy weighted' });
  if (new Set(v.agentIds).size !== v.agentIds.length) ctx.addIssue({ code: 'custom', path: ['agentIds'], message: 'must not repeat an agent' });
  for (const id of Object.keys(v.weights ?? {})) {
    if (v.agentIds.length > 0 && !v.agentIds.includes(id)) ctx.addIssue({ code: 'custom', path: ['weights', id], message: 'is not one of agentIds' });
  }
}

export const routingRuleCreate = routingRuleInput.superRefine(ruleConsistent).meta({ id: 'RoutingRuleCreate' });
export type RoutingRuleCreate = z.infer<typeof routingRuleCreate>;
export const routingRulePatch = mergePatchOf(routingRuleInput).meta({ id: 'RoutingRulePatch' });
export type RoutingRulePatch = z.infer<typeof routingRulePatch>;

export const routingRule = z
  .object({
    id: z.string(),
    name: z.string(),
    priority: z.number().int(),
    enabled: z.boolean(),
    conditions: z.object({
      sources: z.array(z.string()).optional(),
      propertyTypes: z.array(propertyType).optional(),
      minPrice: z.number().optional(),
      maxPrice: z.number().optional(),
      postalCodes: z.array(z.string()).optional(),
      cities: z.array(z.string()).optional(),
      minScore: z.number().optional(),
    }),
    strategy: routingStrategy,
    agentIds: z.array(z.string()),
    weights: z.record(z.string(), z.number()).nullable(),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'RoutingRule' });
export type RoutingRule = z.infer<typeof routingRule>;

export const routingRulePage = page(routingRule).meta({ id: 'RoutingRulePage' });
export const routingRuleListQuery = z.strictObject({ ...pageQuery });

export const routingSettingsPut = z
  .strictObject({
    defaultAgentIds: z.array(entityId).max(200).default([]).describe('The team default; empty means every agent of the account'),
    defaultStrategy: routingStrategy.default('round_robin'),
  })
  .meta({ id: 'RoutingSettingsPut' });
export type RoutingSettingsPut = z.infer<typeof routingSettingsPut>;

export const routingSettings = z
  .object({ defaultAgentIds: z.array(z.string()), defaultStrategy: routingStrategy, version: z.number().int(), updatedAt: z.string() })
  .meta({ id: 'RoutingSettings' });
export type RoutingSettings = z.infer<typeof routingSettings>;

/** A lead as captured (nothing required), or `{ leadId }` of an existing one. */
export const routingPreviewBody = z
  .strictObject({
    leadId: entityId.optional(),
    name: leadCaptureShape.name.optional(),
    email: leadCaptureShape.email,
    phone: leadCaptureShape.phone,
    source: leadCaptureShape.source,
    message: leadCaptureShape.message,
    propertyInterests: leadCaptureShape.propertyInterests,
    tags: leadCaptureShape.tags,
  })
  .superRefine((v, ctx) => {
    if (v.leadId && Object.keys(v).length > 1) ctx.addIssue({ code: 'custom', path: ['leadId'], message: 'comes alone: either an existing lead or a lead body' });
  })
  .meta({ id: 'RoutingPreviewBody' });
export type RoutingPreviewBody = z.infer<typeof routingPreviewBody>;

export const routingStepOutcomes = ['not_matched', 'no_eligible_agent', 'chosen'] as const;

export const routingDecision = z
  .object({
    agentId: z.string().nullable().describe('Who would get the lead; null when nobody could'),
    ruleId: z.string().nullable(),
    strategy: routingStrategy.nullable(),
    reason: z.string(),
    steps: z.array(z.object({ ruleId: z.string().nullable(), name: z.string(), outcome: z.enum(routingStepOutcomes), detail: z.string() })),
  })
  .meta({ id: 'RoutingDecision' });
export type RoutingDecision = z.infer<typeof routingDecision>;

// ---------------------------------------------------------------------------------------------
// Scoring

/** Activity types that carry engagement points (system bookkeeping types carry none). */
export const engagementActivityTypes = ['inquiry', 'email', 'call', 'property_view', 'form_submission', 'custom', 'note'] as const;

const weight = z.number().min(0).max(100);
const points = z.number().min(0).max(1000);

export const scoringConfigInput = z
  .strictObject({
    weights: z.strictObject({ contact: weight, source: weight, engagement: weight, recency: weight, interest: weight }).describe('Relative weight of each signal (scaled so that all of them together make 100)'),
    sourceQuality: z.record(text(100), z.number().min(0).max(1)).describe('Quality 0..1 per source (keys compared as slugs)'),
    defaultSourceQuality: z.number().min(0).max(1).describe('For sources not in sourceQuality'),
    activityPoints: z.strictObject(Object.fromEntries(engagementActivityTypes.map((t) => [t, points])) as Record<(typeof engagementActivityTypes)[number], typeof points>),
    engagementTarget: z.number().positive().max(100_000).describe('Activity points at which engagement counts in full'),
    recencyHalfLifeDays: z.number().positive().max(3650).describe('Days after the last engagement at which the recency signal has halved'),
  })
  .superRefine((v, ctx) => {
    if (Object.values(v.weights).every((w) => w === 0)) ctx.addIssue({ code: 'custom', path: ['weights'], message: 'at least one weight must be above 0' });
  })
  .meta({ id: 'ScoringConfigPut' });
export type ScoringConfigInput = z.infer<typeof scoringConfigInput>;

export const scoringConfig = z
  .object({
    weights: z.object({ contact: z.number(), source: z.number(), engagement: z.number(), recency: z.number(), interest: z.number() }),
    sourceQuality: z.record(z.string(), z.number()),
    defaultSourceQuality: z.number(),
    activityPoints: z.record(z.string(), z.number()),
    engagementTarget: z.number(),
    recencyHalfLifeDays: z.number(),
    version: z.number().int(),
    updatedAt: z.string(),
    rescoring: z.enum(['pending', 'idle']).describe('`pending` while existing leads are being rescored after a change'),
  })
  .meta({ id: 'ScoringConfig' });
export type ScoringConfig = z.infer<typeof scoringConfig>;

// ---------------------------------------------------------------------------------------------
// Events (payload parts; the subjects are in ./events)

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

/** The activity of a `leads.activity.record` command: what a client would POST. */
export const activityCommandBody = z.strictObject(activityInputShape).superRefine(customTypeGoesWithCustom);
