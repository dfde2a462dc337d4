import type { ScoreBreakdown } from '@estate/contracts/leads';
import {
  activityIdForEvent,
  applyChange,
  changeEvents,
  settleChange,
  slotPlan,
  withActivities,
  type Stamp,
} from './lead.rules';
import type { LeadRecord } from './repositories/lead.repository';

const now = '2025-03-01T12:00:00.000Z';
const breakdown = (engineScore: number): ScoreBreakdown => ({
  engineScore,
  components: Object.fromEntries(
    ['contact', 'source', 'engagement', 'recency', 'interest'].map((n, i) => [
      n,
      { weight: 20, signal: 1, points: i === 0 ? engineScore : 0, detail: '' },
    ]),
  ) as ScoreBreakdown['components'],
  computedAt: now,
});
const lead = (over: Partial<LeadRecord> = {}): LeadRecord => ({
  id: 'lead_1',
  accountId: 'acc_1',
  name: 'Ann',
  email: 'ann@example.com',
  source: 'website',
  status: 'new',
  score: 40,
  scoreSource: 'engine',
  scoreBreakdown: breakdown(40),
  tags: [],
  propertyInterests: [],
  activityCounts: { inquiry: 1 },
  lastActivityByType: { inquiry: '2025-02-01T00:00:00.000Z' },
  recentActivities: [],
  appliedActivityIds: [],
  createdAt: '2025-02-01T00:00:00.000Z',
  updatedAt: '2025-02-01T00:00:00.000Z',
  lastActivityAt: '2025-02-01T00:00:00.000Z',
  version: 3,
  ...over,
});
const stamp = (): Stamp => {
  let n = 0;
  return {
    origin: { accountId: 'acc_1', actor: { type: 'api_key', id: 'key_1', agentId: null }, requestId: 'req_1' },
    leadId: 'lead_1',
    now,
    newId: () => `act_${++n}`,
  };
};

describe('lead changes', () => {
  it('records a status change and an assignment as system consequences of the fields changed', () => {
    const current = lead();
    const assignment = { ruleId: null, strategy: 'manual' as const, reason: 'by hand', assignedAt: now };
    const { next, activities } = applyChange(
      current,
      { fields: { status: 'contacted', agentId: 'agt_1' }, assignment, activities: [{ type: 'call' }] },
      stamp(),
    );
    expect(activities.map((a) => [a.id, a.type])).toEqual([
      ['act_1', 'call'],
      ['act_2', 'status_change'],
      ['act_3', 'assignment'],
    ]);
    expect(activities[2].data).toMatchObject({ from: null, to: 'agt_1', strategy: 'manual' });
    expect(next.assignment).toEqual(assignment);
    expect(next.activityCounts).toEqual({ inquiry: 1, call: 1 });
    expect(next.lastActivityAt).toBe(now);
  });

  it('moves an engine score with the breakdown and records the move; a manual score stays', () => {
    const current = lead();
    const s = stamp();
    const moved = settleChange(current, applyChange(current, {}, s), breakdown(55), s)!;
    expect(moved.next.score).toBe(55);
    expect(moved.scoreChanged).toBe(true);
    expect(moved.activities.map((a) => a.type)).toEqual(['score_change']);
    expect(moved.activities[0].actor).toEqual({ type: 'system', id: null, agentId: null });

    const manual = lead({ score: 90, scoreSource: 'manual' });
    const kept = settleChange(manual, applyChange(manual, {}, s), breakdown(55), s)!;
    expect(kept.next.score).toBe(90);
    expect(kept.scoreChanged).toBe(false);
  });

  it('records who set a manual score on the timeline', () => {
    const current = lead();
    const s = stamp();
    const set = settleChange(
      current,
      applyChange(current, { fields: { score: 95, scoreSource: 'manual' } }, s),
      breakdown(40),
      s,
    )!;
    expect(set.next.score).toBe(95);
    expect(set.activities.map((a) => [a.type, a.actor])).toEqual([['score_change', s.origin.actor]]);
  });

  it('changes nothing when nothing moves, not even the explanation of the score', () => {
    const current = lead();
    const s = stamp();
    expect(settleChange(current, applyChange(current, { fields: { name: 'Ann' } }, s), breakdown(40), s)).toBeNull();
  });

  it('publishes the fields that changed, the assignment, the score and every activity', () => {
    const current = lead();
    const s = stamp();
    const outcome = settleChange(
      current,
      applyChange(current, { fields: { name: 'Anna', agentId: 'agt_1' } }, s),
      breakdown(50),
      s,
    )!;
    const events = changeEvents(s.origin, current, { ...outcome, next: { ...outcome.next, version: 4 } }, now);
    expect(events.map((e) => e.subject)).toEqual([
      'leads.lead.updated',
      'leads.lead.assigned',
      'leads.lead.scored',
      'leads.activity.recorded',
      'leads.activity.recorded',
    ]);
    expect(events[0].payload).toMatchObject({ version: 4, changes: ['name'] });
    expect(events.every((e) => e.requestId === 'req_1')).toBe(true);
  });
});

describe('capacity slots', () => {
  const slot = { agentId: 'agt_1', token: 't1' };
  it('keeps the slot while the lead stays open with its agent', () => {
    expect(slotPlan(lead({ agentId: 'agt_1', slot }), lead({ agentId: 'agt_1', status: 'contacted' }))).toEqual({
      kept: slot,
    });
  });
  it('gives the slot back when the lead closes or loses its agent', () => {
    expect(slotPlan(lead({ agentId: 'agt_1', slot }), lead({ agentId: 'agt_1', status: 'closed_lost' }))).toEqual({
      kept: undefined,
      release: slot,
    });
    expect(slotPlan(lead({ agentId: 'agt_1', slot }), lead())).toEqual({ kept: undefined, release: slot });
  });
  it('takes the slot routing offers on the new agent, or holds one', () => {
    const offered = { agentId: 'agt_2', token: 't2' };
    expect(slotPlan(lead({ agentId: 'agt_1', slot }), lead({ agentId: 'agt_2' }), offered)).toEqual({
      kept: offered,
      release: slot,
    });
    expect(slotPlan(lead(), lead({ agentId: 'agt_2' }))).toEqual({ holdOn: 'agt_2', release: undefined });
  });
});

describe('timeline aggregates', () => {
  it('keeps the newest activities, newest first, and the ids applied', () => {
    const activities = [1, 2, 3, 4, 5, 6].map((d) => ({
      id: `act_${d}`,
      leadId: 'lead_1',
      type: 'note' as const,
      customType: null,
      occurredAt: `2025-02-0${d}T00:00:00.000Z`,
      summary: null,
      data: null,
      listingId: null,
      actor: { type: 'system' as const, id: null, agentId: null },
      recordedAt: now,
    }));
    const next = withActivities(lead(), activities);
    expect(next.recentActivities.map((a) => a.id)).toEqual(['act_6', 'act_5', 'act_4', 'act_3', 'act_2']);
    expect(next.appliedActivityIds).toEqual(activities.map((a) => a.id));
    expect(next.activityCounts).toEqual({ inquiry: 1, note: 6 });
  });

  it("names a bus command's activity by its event id, always the same", () => {
    expect(activityIdForEvent('acc_1', 'evt_1')).toBe(activityIdForEvent('acc_1', 'evt_1'));
    expect(activityIdForEvent('acc_1', 'evt_1')).not.toBe(activityIdForEvent('acc_2', 'evt_1'));
  });
});
