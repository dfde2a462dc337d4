import { z } from 'zod';
import { text } from './common';
import { examples } from '../examples';

/** Who set a lead's score: the engine, or a person (the engine then leaves it alone). */
export const scoreSources = ['engine', 'manual'] as const;

export const scoreComponentNames = ['contact', 'source', 'engagement', 'recency', 'interest'] as const;
export type ScoreComponentName = (typeof scoreComponentNames)[number];

const scoreComponent = z.object({
  weight: z.number().describe('Configured weight of this signal'),
  signal: z.number().describe('Strength of the signal, 0..1'),
  points: z
    .number()
    .int()
    .describe('Points this signal contributes; the points of all signals add up to `engineScore`'),
  detail: z.string(),
});

export const scoreBreakdown = z
  .object({
    engineScore: z.number().int().describe('What the engine computes; equals `score` unless the score is manual'),
    components: z.object(
      Object.fromEntries(scoreComponentNames.map((n) => [n, scoreComponent])) as Record<
        ScoreComponentName,
        typeof scoreComponent
      >,
    ),
    computedAt: z.string(),
  })
  .meta({ id: 'ScoreBreakdown' });
export type ScoreBreakdown = z.infer<typeof scoreBreakdown>;

/** Activity types that carry engagement points (system bookkeeping types carry none). */
export const engagementActivityTypes = [
  'inquiry',
  'email',
  'call',
  'property_view',
  'form_submission',
  'custom',
  'note',
] as const;

/** Sources a scoring configuration may rate: more is a mistake or an attack, never a brokerage's list. */
const MAX_SOURCES = 200;
const weight = z.number().min(0).max(100);
const points = z.number().min(0).max(1000);

export const scoringConfigInput = z
  .strictObject({
    weights: z
      .union(
        // At least one weight above 0: one option per signal that could be it, so the document says so (`anyOf`).
        scoreComponentNames.map((above) =>
          z.strictObject(
            Object.fromEntries(scoreComponentNames.map((n) => [n, n === above ? weight.gt(0) : weight])) as Record<
              ScoreComponentName,
              typeof weight
            >,
          ),
        ),
        { error: 'at least one weight must be above 0' },
      )
      .describe('Relative weight of each signal, at least one above 0 (scaled so that all of them together make 100)'),
    sourceQuality: z
      .record(text(100), z.number().min(0).max(1))
      .refine((sources) => Object.keys(sources).length <= MAX_SOURCES, {
        message: `at most ${MAX_SOURCES} sources`,
      })
      .describe(`Quality 0..1 per source (keys compared as slugs), at most 200 sources`),
    defaultSourceQuality: z.number().min(0).max(1).describe('For sources not in sourceQuality'),
    activityPoints: z.strictObject(
      Object.fromEntries(engagementActivityTypes.map((t) => [t, points])) as Record<
        (typeof engagementActivityTypes)[number],
        typeof points
      >,
    ),
    engagementTarget: z.number().positive().max(100_000).describe('Activity points at which engagement counts in full'),
    recencyHalfLifeDays: z
      .number()
      .positive()
      .max(3650)
      .describe('Days after the last engagement at which the recency signal has halved'),
  })
  .meta({ id: 'ScoringConfigPut', examples: [examples.scoringConfigPut] });
export type ScoringConfigInput = z.infer<typeof scoringConfigInput>;

export const scoringConfig = z
  .object({
    weights: z.object({
      contact: z.number(),
      source: z.number(),
      engagement: z.number(),
      recency: z.number(),
      interest: z.number(),
    }),
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
