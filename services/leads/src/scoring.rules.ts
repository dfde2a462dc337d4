import {
  engagementActivityTypes,
  scoreComponentNames,
  type ScoreBreakdown,
  type ScoreComponentName,
  type ScoringConfigInput,
} from '@estate/contracts/leads';
import type { ListingStatus } from '@estate/contracts/listings';

export type ScoringSettings = ScoringConfigInput;
export type EngagementType = (typeof engagementActivityTypes)[number];

/** The documented defaults (docs/decisions/0042-leads-scoring.md); weights add up to 100 points. */
export const defaultScoringConfig: ScoringSettings = Object.freeze({
  weights: { contact: 15, source: 20, engagement: 35, recency: 20, interest: 10 },
  sourceQuality: {
    referral: 1,
    'past-client': 1,
    'open-house': 0.8,
    'walk-in': 0.8,
    website: 0.7,
    'sign-call': 0.7,
    zillow: 0.6,
    'realtor-com': 0.6,
    'social-media': 0.4,
    'cold-list': 0.2,
  },
  defaultSourceQuality: 0.5,
  activityPoints: { inquiry: 10, form_submission: 10, call: 15, email: 5, property_view: 8, custom: 5, note: 0 },
  engagementTarget: 60,
  recencyHalfLifeDays: 14,
});

/** Listing statuses that make an interest worth pursuing now. */
const ON_MARKET: ReadonlySet<ListingStatus> = new Set(['coming_soon', 'active', 'active_under_contract']);
const DAY_MS = 24 * 60 * 60 * 1000;

/** What the engine looks at; gathered by the service, so the engine stays pure. */
export interface ScoringFacts {
  hasEmail: boolean;
  hasPhone: boolean;
  /** Slug. */
  source: string;
  /** Activities on the timeline per type, and when the latest of each type happened. */
  activityCounts: Partial<Record<EngagementType, number>>;
  lastActivityByType: Partial<Record<EngagementType, string>>;
  createdAt: string;
  /** One entry per property interest: its listing's status, or null when the listing is unknown or gone. */
  interests: (ListingStatus | null)[];
}

const clamp01 = (n: number) => Math.min(1, Math.max(0, n));
const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Integer points per component that add up exactly to the rounded total (largest remainder
 * method), so the breakdown explains every point of the score.
 */
export function apportion(raw: Record<ScoreComponentName, number>): Record<ScoreComponentName, number> {
  const total = Math.round(scoreComponentNames.reduce((sum, n) => sum + raw[n], 0));
  const floors = Object.fromEntries(scoreComponentNames.map((n) => [n, Math.floor(raw[n])])) as Record<
    ScoreComponentName,
    number
  >;
  let left = total - scoreComponentNames.reduce((sum, n) => sum + floors[n], 0);
  const byRemainder = [...scoreComponentNames].sort(
    (a, b) =>
      raw[b] - floors[b] - (raw[a] - floors[a]) || scoreComponentNames.indexOf(a) - scoreComponentNames.indexOf(b),
  );
  for (const name of byRemainder) {
    if (left <= 0) break;
    floors[name] += 1;
    left -= 1;
  }
  return floors;
}

function signals(
  facts: ScoringFacts,
  config: ScoringSettings,
  now: Date,
): Record<ScoreComponentName, { signal: number; detail: string }> {
  const contactSignal = (facts.hasEmail ? 0.5 : 0) + (facts.hasPhone ? 0.5 : 0);
  const contactDetail =
    [facts.hasEmail ? 'email' : null, facts.hasPhone ? 'phone' : null].filter(Boolean).join(' and ') ||
    'no contact channel';

  const known = Object.hasOwn(config.sourceQuality, facts.source);
  const sourceSignal = known ? config.sourceQuality[facts.source] : config.defaultSourceQuality;

  let points = 0;
  const parts: string[] = [];
  let lastEngagement: number | undefined;
  for (const type of engagementActivityTypes) {
    const count = facts.activityCounts[type] ?? 0;
    const each = config.activityPoints[type] ?? 0;
    if (count === 0) continue;
    points += count * each;
    parts.push(`${count} × ${type} (${each})`);
    const at = facts.lastActivityByType[type];
    if (each > 0 && at) lastEngagement = Math.max(lastEngagement ?? 0, Date.parse(at));
  }
  const engagementSignal = clamp01(points / config.engagementTarget);

  const since = lastEngagement ?? Date.parse(facts.createdAt);
  const ageDays = Math.max(0, (now.getTime() - since) / DAY_MS);
  const recencySignal = 0.5 ** (ageDays / config.recencyHalfLifeDays);

  const onMarket = facts.interests.filter((s) => s !== null && ON_MARKET.has(s)).length;
  const interestSignal = facts.interests.length === 0 ? 0 : onMarket > 0 ? 1 : 0.5;
  const interestDetail =
    facts.interests.length === 0
      ? 'no property interest'
      : onMarket > 0
        ? `${onMarket} of ${facts.interests.length} interests on the market`
        : `${facts.interests.length} interests, none on the market (or not known yet)`;

  return {
    contact: { signal: contactSignal, detail: contactDetail },
    source: {
      signal: sourceSignal,
      detail: `source ${facts.source}: quality ${sourceSignal}${known ? '' : ' (default)'}`,
    },
    engagement: {
      signal: engagementSignal,
      detail: `${parts.join(' + ') || 'no activity'} = ${points} of ${config.engagementTarget} points`,
    },
    recency: {
      signal: recencySignal,
      detail: `${lastEngagement === undefined ? 'created' : 'last engagement'} ${round2(ageDays)} days ago, half-life ${config.recencyHalfLifeDays} days`,
    },
    interest: { signal: interestSignal, detail: interestDetail },
  };
}

/** The engine: a 0..100 score from weighted signals, and the breakdown that explains every point. */
export function scoreLead(facts: ScoringFacts, config: ScoringSettings, now: Date): ScoreBreakdown {
  const s = signals(facts, config, now);
  const weightSum = scoreComponentNames.reduce((sum, n) => sum + config.weights[n], 0);
  const raw = Object.fromEntries(
    scoreComponentNames.map((n) => [n, (config.weights[n] / weightSum) * 100 * clamp01(s[n].signal)]),
  ) as Record<ScoreComponentName, number>;
  const points = apportion(raw);
  const components = Object.fromEntries(
    scoreComponentNames.map((n) => [
      n,
      { weight: config.weights[n], signal: round2(s[n].signal), points: points[n], detail: s[n].detail },
    ]),
  ) as ScoreBreakdown['components'];
  return {
    engineScore: scoreComponentNames.reduce((sum, n) => sum + points[n], 0),
    components,
    computedAt: now.toISOString(),
  };
}
