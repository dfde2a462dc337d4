import {
  agentsCovering,
  agentsNamed,
  ineligibility,
  matchRule,
  offerOrder,
  routingPlan,
  rulesInOrder,
  weightedCycle,
  type LeadFacts,
  type RoutingAgent,
  type RoutingRuleView,
} from './routing.rules';

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
const agent = (id: string, over: Partial<RoutingAgent> = {}): RoutingAgent => ({
  id,
  name: id,
  active: true,
  capacity: 10,
  openLeads: 0,
  areas: [],
  ...over,
});
const facts = (over: Partial<LeadFacts> = {}): LeadFacts => ({
  source: 'zillow',
  score: 50,
  propertyType: 'residential',
  listPrice: 450000,
  postalCode: '78701',
  city: 'Austin',
  ...over,
});
const rule = (id: string, over: Partial<RoutingRuleView> = {}): RoutingRuleView => ({
  id,
  name: id,
  priority: 10,
  enabled: true,
  conditions: {},
  strategy: 'round_robin',
  agentIds: [],
  weights: null,
  createdAt: '2025-01-01T00:00:00.000Z',
  ...over,
});
const ids = (agents: RoutingAgent[]) => agents.map((a) => a.id);

describe('routing rules', () => {
  it('runs enabled rules by priority, then age, then id', () => {
    const ordered = rulesInOrder([
      rule('c', { priority: 5 }),
      rule('b', { priority: 1, createdAt: '2025-02-01T00:00:00.000Z' }),
      rule('a', { priority: 1, createdAt: '2025-02-01T00:00:00.000Z' }),
      rule('z', { priority: 0, enabled: false }),
      rule('d', { priority: 1, createdAt: '2025-01-01T00:00:00.000Z' }),
    ]);
    expect(ordered.map((r) => r.id)).toEqual(['d', 'a', 'b', 'c']);
  });

  it('matches on every condition and names the first that fails', () => {
    expect(matchRule({}, facts(), slug)).toEqual({ matched: true, detail: 'all conditions hold' });
    expect(matchRule({ sources: ['Zillow', 'Realtor.com'] }, facts(), slug).matched).toBe(true);
    expect(matchRule({ sources: ['Website'] }, facts(), slug)).toEqual({
      matched: false,
      detail: 'source zillow is not one of website',
    });
    expect(matchRule({ minScore: 60 }, facts(), slug).detail).toBe('score 50 is below 60');
    expect(matchRule({ propertyTypes: ['land'] }, facts(), slug).matched).toBe(false);
    expect(matchRule({ propertyTypes: ['residential'] }, facts({ propertyType: null }), slug).detail).toMatch(
      /no known property interest/,
    );
    expect(matchRule({ minPrice: 400000, maxPrice: 450000 }, facts(), slug).matched).toBe(true);
    expect(matchRule({ maxPrice: 449999 }, facts(), slug).detail).toBe('price 450000 is above 449999');
    expect(matchRule({ postalCodes: ['78702'], cities: ['austin'] }, facts(), slug).matched).toBe(true);
    expect(matchRule({ postalCodes: ['78701'] }, facts({ city: null }), slug).matched).toBe(true);
    expect(matchRule({ postalCodes: ['10001'], cities: ['Dallas'] }, facts(), slug).matched).toBe(false);
    expect(
      matchRule(
        { sources: ['zillow'], minScore: 10, propertyTypes: ['residential'], minPrice: 1, postalCodes: ['78701'] },
        facts(),
        slug,
      ).matched,
    ).toBe(true);
  });

  it('skips inactive agents and agents at capacity', () => {
    expect(ineligibility(agent('a'))).toBeNull();
    expect(ineligibility(agent('a', { active: false }))).toBe('inactive');
    expect(ineligibility(agent('a', { capacity: 2, openLeads: 2 }))).toBe('at capacity (2/2)');
    expect(ineligibility(agent('a', { capacity: 0 }))).toBe('at capacity (0/0)');
  });

  it("finds candidates by id (in the rule's order) or by the areas they cover", () => {
    const all = [
      agent('a', { areas: ['78701'] }),
      agent('b', { areas: ['AUSTIN'] }),
      agent('c', { areas: ['Dallas'] }),
    ];
    expect(ids(agentsNamed(['c', 'gone', 'a'], new Map(all.map((a) => [a.id, a]))))).toEqual(['c', 'a']);
    expect(ids(agentsCovering(all, facts()))).toEqual(['a', 'b']);
    expect(agentsCovering(all, facts({ postalCode: null, city: null }))).toEqual([]);
  });
});

describe('routing strategies', () => {
  const three = [agent('a'), agent('b'), agent('c')];

  it('round robin: ticket t starts at candidate (t-1) mod n, so every n tickets give each agent one lead', () => {
    expect(ids(offerOrder('round_robin', three, 1, null))).toEqual(['a', 'b', 'c']);
    expect(ids(offerOrder('round_robin', three, 2, null))).toEqual(['b', 'c', 'a']);
    expect(ids(offerOrder('round_robin', three, 6, null))).toEqual(['c', 'a', 'b']);
    const firsts = Array.from({ length: 30 }, (_, i) => offerOrder('round_robin', three, i + 1, null)[0].id);
    expect(['a', 'b', 'c'].map((id) => firsts.filter((f) => f === id).length)).toEqual([10, 10, 10]);
  });

  it('weighted: each cycle gives every agent exactly its weight, interleaved; weight 0 never', () => {
    expect(weightedCycle(['a', 'b', 'c'], { a: 2, b: 1, c: 0 })).toEqual(['a', 'b', 'a']);
    const cycle = weightedCycle(['a', 'b', 'c'], { a: 3, b: 2 });
    expect(cycle).toHaveLength(6);
    expect(['a', 'b', 'c'].map((id) => cycle.filter((x) => x === id).length)).toEqual([3, 2, 1]);
    const firsts = Array.from({ length: 60 }, (_, i) => offerOrder('weighted', three, i + 1, { a: 3, b: 2 })[0].id);
    expect(['a', 'b', 'c'].map((id) => firsts.filter((f) => f === id).length)).toEqual([30, 20, 10]);
    expect(ids(offerOrder('weighted', three, 1, { a: 2, b: 1, c: 0 }))).toEqual(['a', 'b']);
  });

  it('least loaded: fewest open leads first, then most spare capacity, then listed order', () => {
    const agents = [
      agent('a', { openLeads: 3 }),
      agent('b', { openLeads: 1, capacity: 5 }),
      agent('c', { openLeads: 1, capacity: 8 }),
      agent('d', { openLeads: 0 }),
    ];
    expect(ids(offerOrder('least_loaded', agents, 0, null))).toEqual(['d', 'c', 'b', 'a']);
  });

  it('specific agent: the listed agents in order (the first is the one; the others back it up)', () => {
    expect(ids(offerOrder('specific_agent', [agent('b'), agent('a')], 0, null))).toEqual(['b', 'a']);
    expect(offerOrder('specific_agent', [], 0, null)).toEqual([]);
  });
});

describe('routing plan', () => {
  it('tries the matching rules in order, then the team default, and reports the rules that did not match', () => {
    const agents = [agent('a1', { areas: ['78701'] }), agent('a2')];
    const rules = [
      rule('zillow', { priority: 1, conditions: { sources: ['Zillow'] } }),
      rule('local', { priority: 2 }),
      rule('off', { enabled: false }),
    ];
    const { plan, skipped } = routingPlan('acc_1', {
      rules,
      agents,
      settings: null,
      facts: facts({ source: 'website' }),
      slug,
    });
    expect(skipped).toEqual([
      {
        ruleId: 'zillow',
        name: 'rule "zillow" (priority 1)',
        outcome: 'not_matched',
        detail: 'source website is not one of zillow',
      },
    ]);
    expect(plan.map((s) => [s.ruleId, s.strategy, ids(s.candidates), s.turnKey])).toEqual([
      ['local', 'round_robin', ['a1'], 'acc_1|rule|local'],
      [null, 'round_robin', ['a1', 'a2'], 'acc_1|default'],
    ]);
  });

  it("offers the team default's agents, by its strategy", () => {
    const agents = [agent('a1'), agent('a2'), agent('a3')];
    const { plan } = routingPlan('acc_1', {
      rules: [],
      agents,
      settings: { defaultAgentIds: ['a3', 'gone', 'a1'], defaultStrategy: 'least_loaded' },
      facts: facts(),
      slug,
    });
    expect(plan).toHaveLength(1);
    expect(plan[0]).toMatchObject({ ruleId: null, name: 'team default', strategy: 'least_loaded' });
    expect(ids(plan[0].candidates)).toEqual(['a3', 'a1']);
  });
});
