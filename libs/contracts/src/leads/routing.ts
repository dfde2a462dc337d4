import { z } from 'zod';
import { mergePatchOf, page, pageQuery } from '../common';
import { propertyType } from '../listings';
import { entityId, leadCaptureShape, text } from './common';
import { examples } from '../examples';

export const routingStrategies = ['round_robin', 'weighted', 'least_loaded', 'specific_agent'] as const;
export const routingStrategy = z.enum(routingStrategies);
export type RoutingStrategy = z.infer<typeof routingStrategy>;

/** How an assignment came about: a routing strategy, or an admin setting `agentId` by hand. */
export const assignmentStrategy = z.enum([...routingStrategies, 'manual']);

export const assignment = z
  .object({
    ruleId: z
      .string()
      .nullable()
      .describe('The routing rule that chose the agent; null for the team default or a manual assignment'),
    strategy: assignmentStrategy,
    reason: z.string(),
    assignedAt: z.string(),
  })
  .meta({ id: 'Assignment' });
export type Assignment = z.infer<typeof assignment>;

export const ruleConditions = z.strictObject({
  sources: z.array(text(100)).max(100).optional().describe('Lead sources (compared as slugs)'),
  propertyTypes: z.array(propertyType).max(20).optional().describe("Of the lead's first property interest"),
  minPrice: z.number().min(0).optional().describe('List price of the first property interest, inclusive'),
  maxPrice: z.number().min(0).optional(),
  postalCodes: z
    .array(text(20))
    .max(1000)
    .optional()
    .describe("The first interest's postal code is one of these, or its city one of `cities`"),
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
  agentIds: z
    .array(entityId)
    .max(200)
    .default([])
    .describe("Candidate agents, in order; empty: the agents whose areas cover the lead's property"),
  weights: ruleWeights.optional().describe('Strategy `weighted`: share of each agent (default 1, 0 never)'),
});

/** What JSON Schema cannot say: bounds in order, no agent twice, weights only for candidates. */
function ruleConsistent(
  v: { conditions: RuleConditions; agentIds: string[]; weights?: Record<string, number> },
  ctx: z.RefinementCtx,
) {
  const c = v.conditions;
  if (c.minPrice !== undefined && c.maxPrice !== undefined && c.minPrice > c.maxPrice) {
    ctx.addIssue({ code: 'custom', path: ['conditions', 'minPrice'], message: 'must not be above maxPrice' });
  }
  if (new Set(v.agentIds).size !== v.agentIds.length)
    ctx.addIssue({ code: 'custom', path: ['agentIds'], message: 'must not repeat an agent' });
  for (const id of Object.keys(v.weights ?? {})) {
    if (v.agentIds.length > 0 && !v.agentIds.includes(id))
      ctx.addIssue({ code: 'custom', path: ['weights', id], message: 'is not one of agentIds' });
  }
}

const ruleShape = routingRuleInput.omit({ strategy: true, weights: true }).shape;
const weightsOnlyWhenWeighted = z.never({ error: 'only apply to strategy weighted' }).optional();

/**
 * A new rule: `weights` only with strategy `weighted`, at least one agent with `specific_agent`. One option per
 * strategy, so the document says so too (`oneOf`).
 */
export const routingRuleCreate = z
  .discriminatedUnion('strategy', [
    z.strictObject({ ...ruleShape, strategy: z.literal('weighted'), weights: routingRuleInput.shape.weights }),
    z.strictObject({
      ...ruleShape,
      strategy: z.literal('specific_agent'),
      agentIds: z
        .array(entityId, {
          error: (issue) =>
            issue.input === undefined ? 'must name at least one agent for strategy specific_agent' : undefined,
        })
        .min(1, 'must name at least one agent for strategy specific_agent')
        .max(200)
        .describe('The agents the lead goes to, in order'),
      weights: weightsOnlyWhenWeighted,
    }),
    z.strictObject({
      ...ruleShape,
      strategy: z.enum(routingStrategies).exclude(['weighted', 'specific_agent']),
      weights: weightsOnlyWhenWeighted,
    }),
  ])
  .superRefine(ruleConsistent)
  .meta({ id: 'RoutingRuleCreate', examples: [examples.routingRuleCreate] });
export type RoutingRuleCreate = z.infer<typeof routingRuleCreate>;
export const routingRulePatch = mergePatchOf(routingRuleInput).meta({
  id: 'RoutingRulePatch',
  examples: [examples.routingRulePatch],
});
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
    defaultAgentIds: z
      .array(entityId)
      .max(200)
      .default([])
      .describe('The team default; empty means every agent of the account'),
    defaultStrategy: routingStrategy.default('round_robin'),
  })
  .meta({ id: 'RoutingSettingsPut', examples: [examples.routingSettingsPut] });
export type RoutingSettingsPut = z.infer<typeof routingSettingsPut>;

export const routingSettings = z
  .object({
    defaultAgentIds: z.array(z.string()),
    defaultStrategy: routingStrategy,
    version: z.number().int(),
    updatedAt: z.string(),
  })
  .meta({ id: 'RoutingSettings' });
export type RoutingSettings = z.infer<typeof routingSettings>;

/** A lead as captured (nothing required), or `{ leadId }` of an existing one alone: one option each (`anyOf`). */
export const routingPreviewBody = z
  .union(
    [
      z.strictObject({ leadId: entityId.describe('An existing lead, alone') }),
      z.strictObject({
        name: leadCaptureShape.name.optional(),
        email: leadCaptureShape.email,
        phone: leadCaptureShape.phone,
        source: leadCaptureShape.source,
        message: leadCaptureShape.message,
        propertyInterests: leadCaptureShape.propertyInterests,
        tags: leadCaptureShape.tags,
      }),
    ],
    { error: 'leadId comes alone: either an existing lead or a lead body' },
  )
  .meta({ id: 'RoutingPreviewBody', examples: [examples.routingPreviewBody] });
export type RoutingPreviewBody = z.infer<typeof routingPreviewBody>;

export const routingStepOutcomes = ['not_matched', 'no_eligible_agent', 'chosen'] as const;

export const routingDecision = z
  .object({
    agentId: z.string().nullable().describe('Who would get the lead; null when nobody could'),
    ruleId: z.string().nullable(),
    strategy: routingStrategy.nullable(),
    reason: z.string(),
    steps: z.array(
      z.object({
        ruleId: z.string().nullable(),
        name: z.string(),
        outcome: z.enum(routingStepOutcomes),
        detail: z.string(),
      }),
    ),
  })
  .meta({ id: 'RoutingDecision' });
export type RoutingDecision = z.infer<typeof routingDecision>;
