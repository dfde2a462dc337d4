import type { Lead, ScoringConfig } from '@estate/contracts/leads';
import { defaultScoringConfig } from '../src/scoring.rules';
import { admin, agentKey, integration, startLeads, type LeadsHarness } from './harness';

describe('scoring configuration over HTTP (embedded adapters)', () => {
  let h: LeadsHarness;
  const getConfig = () => h.call(admin, 'GET', '/v1/scoring/config');
  const put = (body: unknown, headers: Record<string, string> = {}) =>
    h.call(admin, 'PUT', '/v1/scoring/config', body, headers);
  const lead = async (id: string) => (await h.call(admin, 'GET', `/v1/leads/${id}`)).json() as Lead;

  beforeEach(async () => {
    h = await startLeads();
  });
  afterEach(async () => h.close());

  it('serves the documented defaults as version 1, for admins only', async () => {
    const res = await getConfig();
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ...defaultScoringConfig,
      version: 1,
      updatedAt: expect.any(String),
      rescoring: 'idle',
    });
    expect(res.headers.etag).toBe('"1"');
    expect((await h.call(agentKey('agt_1'), 'GET', '/v1/scoring/config')).statusCode).toBe(403);
  });

  it('answers a caller without the role 403 before looking at the body or query', async () => {
    const agent = agentKey('agt_1');
    expect((await h.call(agent, 'PUT', '/v1/scoring/config', { weights: 'nonsense' })).statusCode).toBe(403);
    expect((await h.call(agent, 'POST', '/v1/routing/rules', { nonsense: true })).statusCode).toBe(403);
    expect((await h.call(integration, 'GET', '/v1/leads?limit=100000')).statusCode).toBe(403);
    expect((await h.call(integration, 'POST', '/v1/agents', {})).statusCode).toBe(403);
  });

  it('refuses an invalid configuration with the paths, changing nothing', async () => {
    const cases: [unknown, string[]][] = [
      [
        { ...defaultScoringConfig, weights: { contact: 0, source: 0, engagement: 0, recency: 0, interest: 0 } },
        ['weights'],
      ],
      [{ ...defaultScoringConfig, sourceQuality: { zillow: 2 } }, ['sourceQuality.zillow']],
      [
        {
          ...defaultScoringConfig,
          sourceQuality: Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`source-${i}`, 0.5])),
        },
        ['sourceQuality'],
      ],
      [
        { ...defaultScoringConfig, activityPoints: { ...defaultScoringConfig.activityPoints, status_change: 5 } },
        ['activityPoints.status_change'],
      ],
      [{ ...defaultScoringConfig, recencyHalfLifeDays: 0 }, ['recencyHalfLifeDays']],
      [
        { weights: defaultScoringConfig.weights },
        ['activityPoints', 'defaultSourceQuality', 'engagementTarget', 'recencyHalfLifeDays', 'sourceQuality'],
      ],
    ];
    for (const [body, paths] of cases) {
      const res = await put(body);
      expect({
        paths,
        status: res.statusCode,
        got: res
          .json()
          .errors?.map((e: { path: string }) => e.path)
          .sort(),
      }).toEqual({ paths, status: 422, got: paths });
    }
    expect((await getConfig()).json().version).toBe(1);
  });

  it('rescores existing leads after a change (manual scores stay), with score_change activities and events', async () => {
    const web = (
      await h.call(admin, 'POST', '/v1/leads', { name: 'Web', email: 'web@example.com', source: 'Website' })
    ).json() as Lead;
    const pinned = (
      await h.call(admin, 'POST', '/v1/leads', { name: 'Pinned', email: 'pinned@example.com', source: 'website' })
    ).json() as Lead;
    await h.call(admin, 'PATCH', `/v1/leads/${pinned.id}`, { score: 42 });
    await getConfig();
    const config = {
      ...defaultScoringConfig,
      weights: { ...defaultScoringConfig.weights, source: 60 },
      sourceQuality: { 'Web Site!': 0.1, Website: 0.05 },
    };
    const res = await put(config, { 'if-match': '"1"' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ version: 2, sourceQuality: { 'web-site': 0.1, website: 0.05 } });
    expect(res.headers.etag).toBe('"2"');
    expect((await put(config, { 'if-match': '"1"' })).statusCode).toBe(412);

    await h.runtime.scoring.settled();
    expect(((await getConfig()).json() as ScoringConfig).rescoring).toBe('idle');
    const rescored = await lead(web.id);
    expect(rescored.score).toBeLessThan(web.score);
    expect(rescored.scoreBreakdown.components.source).toMatchObject({ weight: 60, signal: 0.05 });
    const stayed = await lead(pinned.id);
    expect(stayed).toMatchObject({ score: 42, scoreSource: 'manual' });
    expect(stayed.scoreBreakdown.components.source.weight).toBe(60);
    const timeline = (await h.call(admin, 'GET', `/v1/leads/${web.id}/activities?type=score_change`)).json();
    expect(timeline.items[0]).toMatchObject({
      data: { from: web.score, to: rescored.score, scoreSource: 'engine' },
      actor: { type: 'system' },
    });
    await h.runtime.relay.flush();
    expect(h.events.filter((e) => e.subject === 'leads.lead.scored' && e.payload.leadId === web.id)).toHaveLength(1);
  });

  it("new leads are scored with the account's configuration", async () => {
    await put({
      ...defaultScoringConfig,
      weights: { contact: 100, source: 0, engagement: 0, recency: 0, interest: 0 },
    });
    const both = (
      await h.call(admin, 'POST', '/v1/leads', { name: 'Both', email: 'b@example.com', phone: '+1 512 555 0100' })
    ).json() as Lead;
    const one = (await h.call(admin, 'POST', '/v1/leads', { name: 'One', email: 'o@example.com' })).json() as Lead;
    expect([both.score, one.score]).toEqual([100, 50]);
  });
});
