import { scoreComponentNames, type ScoreBreakdown } from '@estate/contracts/leads';
import { apportion, defaultScoringConfig, scoreLead, type ScoringFacts } from './scoring.rules';

const now = new Date('2025-03-01T12:00:00.000Z');
const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000).toISOString();
const facts = (over: Partial<ScoringFacts> = {}): ScoringFacts => ({
  hasEmail: true,
  hasPhone: false,
  source: 'website',
  activityCounts: { inquiry: 1 },
  lastActivityByType: { inquiry: daysAgo(0) },
  createdAt: daysAgo(0),
  interests: [],
  ...over,
});
const sum = (b: ScoreBreakdown) => scoreComponentNames.reduce((n, c) => n + b.components[c].points, 0);

describe('scoring engine', () => {
  it('scores a fresh web inquiry from its signals with the default weights, and the points add up', () => {
    const b = scoreLead(facts({ hasPhone: true, interests: ['active'] }), defaultScoringConfig, now);
    // contact 15 + source 0.7×20 + engagement 10/60×35 + recency 20 + interest 10 = 64.83
    expect(b.engineScore).toBe(65);
    expect(b.components).toMatchObject({
      contact: { weight: 15, signal: 1, points: 15 },
      source: { weight: 20, signal: 0.7, points: 14 },
      engagement: { weight: 35, signal: 0.17, points: 6 },
      recency: { weight: 20, signal: 1, points: 20 },
      interest: { weight: 10, signal: 1, points: 10 },
    });
    expect(sum(b)).toBe(b.engineScore);
    expect(b.computedAt).toBe(now.toISOString());
  });

  it('moves with engagement, up to the target, and explains it', () => {
    const quiet = scoreLead(facts(), defaultScoringConfig, now);
    const engaged = scoreLead(
      facts({ activityCounts: { inquiry: 1, call: 2, property_view: 1 } }),
      defaultScoringConfig,
      now,
    );
    const saturated = scoreLead(facts({ activityCounts: { inquiry: 1, call: 20 } }), defaultScoringConfig, now);
    expect(engaged.engineScore).toBeGreaterThan(quiet.engineScore);
    expect(engaged.components.engagement.detail).toBe(
      '1 × inquiry (10) + 2 × call (15) + 1 × property_view (8) = 48 of 60 points',
    );
    expect(saturated.components.engagement).toMatchObject({ signal: 1, points: 35 });
    for (const b of [quiet, engaged, saturated]) expect(sum(b)).toBe(b.engineScore);
  });

  it('decays with time since the last engagement that earns points (notes do not count)', () => {
    const fresh = scoreLead(facts(), defaultScoringConfig, now);
    const halfLife = scoreLead(
      facts({
        lastActivityByType: { inquiry: daysAgo(14), note: daysAgo(0) },
        activityCounts: { inquiry: 1, note: 3 },
      }),
      defaultScoringConfig,
      now,
    );
    expect(fresh.components.recency.points).toBe(20);
    expect(halfLife.components.recency).toMatchObject({ signal: 0.5, points: 10 });
    expect(halfLife.components.recency.detail).toBe('last engagement 14 days ago, half-life 14 days');
  });

  it('falls back to the default source quality and uses configured sources', () => {
    expect(scoreLead(facts({ source: 'billboard' }), defaultScoringConfig, now).components.source).toMatchObject({
      signal: 0.5,
      points: 10,
    });
    expect(scoreLead(facts({ source: 'referral' }), defaultScoringConfig, now).components.source).toMatchObject({
      signal: 1,
      points: 20,
    });
  });

  it('rates interests: none, only off-market or unknown listings, or one on the market', () => {
    const of = (interests: ScoringFacts['interests']) =>
      scoreLead(facts({ interests }), defaultScoringConfig, now).components.interest.points;
    expect(of([])).toBe(0);
    expect(of([null, 'closed'])).toBe(5);
    expect(of(['closed', 'coming_soon'])).toBe(10);
  });

  it('scales any weights to 100 points and stays within 0..100', () => {
    const config = {
      ...defaultScoringConfig,
      weights: { contact: 1, source: 1, engagement: 1, recency: 1, interest: 0 },
    };
    const best = scoreLead(
      facts({
        hasPhone: true,
        source: 'referral',
        activityCounts: { call: 10 },
        lastActivityByType: { call: daysAgo(0) },
      }),
      config,
      now,
    );
    expect(best.engineScore).toBe(100);
    expect(best.components.interest.points).toBe(0);
    const worst = scoreLead(
      facts({
        hasEmail: false,
        source: 'cold-list',
        activityCounts: {},
        lastActivityByType: {},
        createdAt: daysAgo(3650),
      }),
      config,
      now,
    );
    expect(worst.engineScore).toBeGreaterThanOrEqual(0);
    expect(sum(worst)).toBe(worst.engineScore);
  });

  it('apportions rounded points without losing or inventing one', () => {
    expect(apportion({ contact: 3.4, source: 3.4, engagement: 3.2, recency: 0, interest: 0 })).toEqual({
      contact: 4,
      source: 3,
      engagement: 3,
      recency: 0,
      interest: 0,
    });
    expect(apportion({ contact: 0.5, source: 0.5, engagement: 0.5, recency: 0.5, interest: 0 })).toEqual({
      contact: 1,
      source: 1,
      engagement: 0,
      recency: 0,
      interest: 0,
    });
    for (let i = 0; i < 200; i++) {
      const raw = {
        contact: Math.random() * 20,
        source: Math.random() * 20,
        engagement: Math.random() * 20,
        recency: Math.random() * 20,
        interest: Math.random() * 20,
      };
      const total = Object.values(raw).reduce((a, b) => a + b, 0);
      const points = apportion(raw);
      expect(Object.values(points).reduce((a, b) => a + b, 0)).toBe(Math.round(total));
      for (const k of scoreComponentNames) expect(Math.abs(points[k] - raw[k])).toBeLessThan(1);
    }
  });
});
