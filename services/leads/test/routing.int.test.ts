import type { Agent, Lead } from '@estate/contracts/leads';
import { admin, agentKey, integration, listing, publishListing, startLeads, type LeadsHarness } from './harness';

type Body = Record<string, unknown>;
let seq = 0;

describe('routing over HTTP (embedded adapters)', () => {
  let h: LeadsHarness;

  const newAgent = async (body: Body = {}): Promise<Agent> => {
    const res = await h.call(admin, 'POST', '/v1/agents', {
      name: `Agent ${++seq}`,
      email: `agent${seq}@example.com`,
      ...body,
    });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const newLead = async (body: Body = {}): Promise<Lead> => {
    const res = await h.call(admin, 'POST', '/v1/leads', {
      name: `Lead ${++seq}`,
      email: `lead${seq}@example.com`,
      ...body,
    });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const rule = async (body: Body) => {
    const res = await h.call(admin, 'POST', '/v1/routing/rules', { name: `Rule ${++seq}`, priority: 10, ...body });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const route = (id: string) => h.call(admin, 'POST', `/v1/leads/${id}/route`);
  const agentOf = async (id: string) => (await h.call(admin, 'GET', `/v1/agents/${id}`)).json() as Agent;
  const tally = (agentIds: (string | null)[]) =>
    agentIds.reduce<Record<string, number>>((t, id) => ({ ...t, [String(id)]: (t[String(id)] ?? 0) + 1 }), {});

  beforeEach(async () => {
    h = await startLeads();
  });
  afterEach(async () => h.close());

  describe('agents', () => {
    it('creates, lists, reads, updates (merge patch, If-Match) and deletes agents; admins only', async () => {
      const a = await newAgent({ phone: '(512) 555-0177', areas: ['78701', 'Austin'] });
      expect(a).toMatchObject({
        id: expect.stringMatching(/^agt_/),
        active: true,
        capacity: 25,
        openLeads: 0,
        phone: '+15125550177',
        areas: ['78701', 'Austin'],
        version: 1,
      });
      const b = await newAgent({ active: false });
      const page = (await h.call(admin, 'GET', '/v1/agents?limit=1')).json();
      expect(page).toMatchObject({ total: 2, items: [{ id: a.id }] });
      expect((await h.call(admin, 'GET', `/v1/agents?limit=1&cursor=${page.nextCursor}`)).json()).toMatchObject({
        items: [{ id: b.id }],
        nextCursor: null,
      });
      expect((await h.call(admin, 'GET', '/v1/agents?active=false')).json().items.map((x: Agent) => x.id)).toEqual([
        b.id,
      ]);
      const patched = await h.call(
        admin,
        'PATCH',
        `/v1/agents/${a.id}`,
        { capacity: 3, phone: null },
        { 'if-match': '"1"' },
      );
      expect(patched.json()).toMatchObject({ capacity: 3, phone: null, version: 2, areas: ['78701', 'Austin'] });
      expect(patched.headers.etag).toBe('"2"');
      expect(
        (await h.call(admin, 'PATCH', `/v1/agents/${a.id}`, { capacity: 4 }, { 'if-match': '"1"' })).statusCode,
      ).toBe(412);
      for (const body of [{ capacity: -1 }, { openLeads: 3 }, { email: 'nope' }, { name: null }]) {
        expect({ body, status: (await h.call(admin, 'PATCH', `/v1/agents/${a.id}`, body)).statusCode }).toEqual({
          body,
          status: 422,
        });
      }
      expect((await h.call(admin, 'POST', '/v1/agents', { name: 'x' })).statusCode).toBe(422);
      expect((await h.call(agentKey(a.id), 'GET', '/v1/agents')).statusCode).toBe(403);
      expect((await h.call(integration, 'POST', '/v1/agents', { name: 'x', email: 'x@example.com' })).statusCode).toBe(
        403,
      );
      expect(await h.call(admin, 'DELETE', `/v1/agents/${b.id}`)).toMatchObject({ statusCode: 200 });
      expect((await h.call(admin, 'GET', `/v1/agents/${b.id}`)).statusCode).toBe(404);
    });

    it('refuses to delete an agent holding open leads, and takes a deleted agent out of the rules and the team default', async () => {
      const busy = await newAgent();
      const idle = await newAgent();
      const lead = await newLead();
      await h.call(admin, 'PATCH', `/v1/leads/${lead.id}`, { agentId: busy.id });
      const refused = await h.call(admin, 'DELETE', `/v1/agents/${busy.id}`);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'conflict', openLeads: 1 });
      const r = await rule({
        strategy: 'weighted',
        agentIds: [busy.id, idle.id],
        weights: { [busy.id]: 2, [idle.id]: 1 },
      });
      await h.call(admin, 'PUT', '/v1/routing/settings', { defaultAgentIds: [idle.id, busy.id] });
      expect((await h.call(admin, 'DELETE', `/v1/agents/${idle.id}`)).statusCode).toBe(200);
      expect((await h.call(admin, 'GET', `/v1/routing/rules/${r.id}`)).json()).toMatchObject({
        agentIds: [busy.id],
        weights: { [busy.id]: 2 },
        version: 2,
      });
      expect((await h.call(admin, 'GET', '/v1/routing/settings')).json()).toMatchObject({ defaultAgentIds: [busy.id] });
    });
  });

  describe('rules and the team default', () => {
    it('validates rules, lists them in the order routing tries them, updates and deletes them', async () => {
      const a = await newAgent();
      const bad: [Body, string[]][] = [
        [{ strategy: 'round_robin', agentIds: ['agt_ghost'] }, ['agentIds.0']],
        [{ strategy: 'specific_agent' }, ['agentIds']],
        [{ strategy: 'round_robin', agentIds: [a.id], weights: { [a.id]: 2 } }, ['weights']],
        [{ strategy: 'weighted', agentIds: [a.id], weights: { other: 2 } }, ['weights.other']],
        [{ strategy: 'round_robin', conditions: { minPrice: 5, maxPrice: 1 } }, ['conditions.minPrice']],
        [{ strategy: 'fastest' }, ['strategy']],
        [{ strategy: 'round_robin', conditions: { colour: 'red' } }, ['conditions.colour']],
      ];
      for (const [body, paths] of bad) {
        const res = await h.call(admin, 'POST', '/v1/routing/rules', { name: 'bad', priority: 1, ...body });
        expect({
          body,
          status: res.statusCode,
          paths: res.json().errors?.map((e: { path: string }) => e.path),
        }).toEqual({ body, status: 422, paths });
      }
      const late = await rule({ priority: 20, strategy: 'round_robin' });
      const early = await rule({
        priority: 5,
        strategy: 'specific_agent',
        agentIds: [a.id],
        conditions: { sources: ['Zillow'], minScore: 10 },
      });
      const list = (await h.call(admin, 'GET', '/v1/routing/rules?limit=1')).json();
      expect(list).toMatchObject({ total: 2, items: [{ id: early.id }] });
      expect(
        (await h.call(admin, 'GET', `/v1/routing/rules?cursor=${list.nextCursor}`))
          .json()
          .items.map((x: { id: string }) => x.id),
      ).toEqual([late.id]);
      const patched = await h.call(
        admin,
        'PATCH',
        `/v1/routing/rules/${early.id}`,
        { enabled: false, conditions: { minScore: null } },
        { 'if-match': '"1"' },
      );
      expect(patched.json()).toMatchObject({ enabled: false, conditions: { sources: ['Zillow'] }, version: 2 });
      expect(patched.json().conditions).not.toHaveProperty('minScore');
      expect((await h.call(admin, 'PATCH', `/v1/routing/rules/${early.id}`, { agentIds: [] })).statusCode).toBe(422);
      expect(
        (await h.call(admin, 'DELETE', `/v1/routing/rules/${late.id}`, undefined, { 'if-match': '"7"' })).statusCode,
      ).toBe(412);
      expect((await h.call(admin, 'DELETE', `/v1/routing/rules/${late.id}`)).statusCode).toBe(200);
      expect((await h.call(admin, 'GET', `/v1/routing/rules/${late.id}`)).statusCode).toBe(404);
      expect((await h.call(agentKey(a.id), 'GET', '/v1/routing/rules')).statusCode).toBe(403);
    });

    it('keeps the team default with a version, replaced by PUT', async () => {
      const a = await newAgent();
      const first = await h.call(admin, 'GET', '/v1/routing/settings');
      expect(first.json()).toMatchObject({ defaultAgentIds: [], defaultStrategy: 'round_robin', version: 1 });
      expect(first.headers.etag).toBe('"1"');
      const put = await h.call(
        admin,
        'PUT',
        '/v1/routing/settings',
        { defaultAgentIds: [a.id], defaultStrategy: 'least_loaded' },
        { 'if-match': '"1"' },
      );
      expect(put.json()).toMatchObject({ defaultAgentIds: [a.id], defaultStrategy: 'least_loaded', version: 2 });
      expect(
        (await h.call(admin, 'PUT', '/v1/routing/settings', { defaultAgentIds: [] }, { 'if-match': '"1"' })).statusCode,
      ).toBe(412);
      expect(
        (await h.call(admin, 'PUT', '/v1/routing/settings', { defaultAgentIds: ['agt_ghost'] })).json().errors[0].path,
      ).toBe('defaultAgentIds.0');
    });
  });

  describe('routing a lead', () => {
    it('assigns by the team default (round robin over every agent when unset), records the assignment and publishes it', async () => {
      const [a, b] = [await newAgent(), await newAgent()];
      const lead = await newLead();
      const res = await route(lead.id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        agentId: a.id,
        assignment: {
          ruleId: null,
          strategy: 'round_robin',
          reason: expect.stringContaining('team default'),
          assignedAt: expect.any(String),
        },
        version: 2,
      });
      expect(res.headers.etag).toBe('"2"');
      expect(res.json().latestActivities[0]).toMatchObject({
        type: 'assignment',
        summary: expect.stringContaining(a.id),
      });
      expect((await agentOf(a.id)).openLeads).toBe(1);
      expect((await route((await newLead()).id)).json().agentId).toBe(b.id);
      await h.runtime.relay.flush();
      expect(
        h.events
          .filter((e) => e.subject === 'leads.lead.assigned')
          .map((e) => (e.payload as { agentId: string }).agentId),
      ).toEqual([a.id, b.id]);
    });

    it('is exactly fair under 30 concurrent routings over 3 agents: 10 each', async () => {
      const agents = [await newAgent(), await newAgent(), await newAgent()];
      await rule({ strategy: 'round_robin', agentIds: agents.map((a) => a.id) });
      const leads = await Promise.all(Array.from({ length: 30 }, () => newLead()));
      const results = await Promise.all(leads.map((l) => route(l.id)));
      expect(results.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
      expect(tally(results.map((r) => r.json().agentId))).toEqual(Object.fromEntries(agents.map((a) => [a.id, 10])));
      for (const a of agents) expect((await agentOf(a.id)).openLeads).toBe(10);
    });

    it('never fills an agent past its capacity, also under concurrent routing; closing a lead frees its slot', async () => {
      const agents = [
        await newAgent({ capacity: 2 }),
        await newAgent({ capacity: 2 }),
        await newAgent({ capacity: 2 }),
      ];
      const leads = await Promise.all(Array.from({ length: 10 }, () => newLead()));
      const results = await Promise.all(leads.map((l) => route(l.id)));
      expect(results.filter((r) => r.statusCode === 200)).toHaveLength(6);
      const refused = results.filter((r) => r.statusCode === 409);
      expect(refused).toHaveLength(4);
      expect(refused[0].json()).toMatchObject({
        code: 'no_agent_available',
        detail: expect.stringContaining('at capacity (2/2)'),
      });
      for (const a of agents) expect((await agentOf(a.id)).openLeads).toBe(2);
      const unrouted = leads.find((_, i) => results[i].statusCode === 409)!;
      expect((await h.call(admin, 'GET', `/v1/leads/${unrouted.id}`)).json().agentId).toBeNull();

      const routed = results.find((r) => r.statusCode === 200)!.json() as Lead;
      await h.call(admin, 'PATCH', `/v1/leads/${routed.id}`, { status: 'nurture' });
      expect((await agentOf(routed.agentId!)).openLeads).toBe(1);
      expect((await route(unrouted.id)).json().agentId).toBe(routed.agentId);
      // Reopening takes the slot back, whatever the capacity (the agent already had the lead).
      await h.call(admin, 'PATCH', `/v1/leads/${routed.id}`, { status: 'contacted' });
      expect((await agentOf(routed.agentId!)).openLeads).toBe(3);
    });

    it('skips inactive agents and agents at capacity; a rule with nobody eligible falls through to the next rule, then to the default', async () => {
      const off = await newAgent({ active: false });
      const full = await newAgent({ capacity: 0 });
      const backup = await newAgent();
      const fallback = await newAgent();
      const first = await rule({ priority: 1, strategy: 'round_robin', agentIds: [off.id, full.id] });
      const second = await rule({
        priority: 2,
        strategy: 'specific_agent',
        agentIds: [full.id, backup.id],
        conditions: { sources: ['zillow'] },
      });
      await h.call(admin, 'PUT', '/v1/routing/settings', { defaultAgentIds: [off.id, fallback.id] });

      const zillow = await route((await newLead({ source: 'Zillow' })).id);
      expect(zillow.json()).toMatchObject({
        agentId: backup.id,
        assignment: { ruleId: second.id, strategy: 'specific_agent' },
      });
      const web = await route((await newLead({ source: 'website' })).id);
      expect(web.json()).toMatchObject({ agentId: fallback.id, assignment: { ruleId: null } });

      await h.call(admin, 'PATCH', `/v1/agents/${fallback.id}`, { active: false });
      const none = await route((await newLead({ source: 'website' })).id);
      expect(none.statusCode).toBe(409);
      expect(none.json().detail).toContain(`${off.id} inactive`);
      expect(none.json().detail).toContain(`${full.id} at capacity (0/0)`);
      const steps = (await h.call(admin, 'POST', '/v1/routing/preview', { source: 'zillow' })).json().steps;
      expect(steps.map((s: { ruleId: string; outcome: string }) => [s.ruleId, s.outcome])).toEqual([
        [first.id, 'no_eligible_agent'],
        [second.id, 'chosen'],
      ]);
    });

    it('matches rules on price band, property type, postal code or city, and minimum score of the first interest', async () => {
      await publishListing(h.bus, 'acc_alice', listing('lst_cheap', { listPrice: 200000, postalCode: '78702' }));
      await publishListing(
        h.bus,
        'acc_alice',
        listing('lst_lux', { listPrice: 2_000_000, city: 'Dallas', postalCode: '75201' }),
      );
      await publishListing(h.bus, 'acc_alice', listing('lst_land', { propertyType: 'land' }));
      const [lux, austin, land, top, other] = [
        await newAgent(),
        await newAgent(),
        await newAgent(),
        await newAgent(),
        await newAgent(),
      ];
      const luxRule = await rule({
        priority: 1,
        strategy: 'specific_agent',
        agentIds: [lux.id],
        conditions: { minPrice: 1_000_000 },
      });
      const austinRule = await rule({
        priority: 2,
        strategy: 'specific_agent',
        agentIds: [austin.id],
        conditions: { postalCodes: ['78702'], cities: ['Houston'] },
      });
      await rule({
        priority: 3,
        strategy: 'specific_agent',
        agentIds: [land.id],
        conditions: { propertyTypes: ['land', 'farm'] },
      });
      await rule({ priority: 4, strategy: 'specific_agent', agentIds: [top.id], conditions: { minScore: 99 } });
      await h.call(admin, 'PUT', '/v1/routing/settings', {
        defaultAgentIds: [other.id],
        defaultStrategy: 'specific_agent',
      });
      const routeFor = async (listingId?: string) =>
        (await route((await newLead(listingId ? { propertyInterests: [{ listingId }] } : {})).id)).json();
      expect(await routeFor('lst_lux')).toMatchObject({ agentId: lux.id, assignment: { ruleId: luxRule.id } });
      expect(await routeFor('lst_cheap')).toMatchObject({ agentId: austin.id, assignment: { ruleId: austinRule.id } });
      expect((await routeFor('lst_land')).agentId).toBe(land.id);
      expect((await routeFor()).agentId).toBe(other.id);
      expect((await routeFor('lst_unknown')).agentId).toBe(other.id);
      const manual = await newLead();
      await h.call(admin, 'PATCH', `/v1/leads/${manual.id}`, { score: 99.5 });
      expect((await route(manual.id)).json().agentId).toBe(top.id);
    });

    it('routes by area when a rule names no agents', async () => {
      await publishListing(h.bus, 'acc_alice', listing('lst_n', { postalCode: '78751' }));
      const north = await newAgent({ areas: ['78751'] });
      await newAgent({ areas: ['78704'] });
      await rule({ strategy: 'round_robin' });
      expect((await route((await newLead({ propertyInterests: [{ listingId: 'lst_n' }] })).id)).json().agentId).toBe(
        north.id,
      );
    });

    it('weighted routing gives each agent its share of every cycle; least loaded evens the load', async () => {
      const [a, b] = [await newAgent(), await newAgent()];
      await rule({ strategy: 'weighted', agentIds: [a.id, b.id], weights: { [a.id]: 3, [b.id]: 1 } });
      const weighted = await Promise.all(
        (await Promise.all(Array.from({ length: 8 }, () => newLead()))).map((l) => route(l.id)),
      );
      expect(tally(weighted.map((r) => r.json().agentId))).toEqual({ [a.id]: 6, [b.id]: 2 });

      const rules = (await h.call(admin, 'GET', '/v1/routing/rules')).json().items;
      await h.call(admin, 'DELETE', `/v1/routing/rules/${rules[0].id}`);
      const c = await newAgent();
      await h.call(admin, 'PUT', '/v1/routing/settings', {
        defaultAgentIds: [a.id, b.id, c.id],
        defaultStrategy: 'least_loaded',
      });
      const balanced = await Promise.all(
        (await Promise.all(Array.from({ length: 10 }, () => newLead()))).map((l) => route(l.id)),
      );
      expect(balanced.every((r) => r.statusCode === 200)).toBe(true);
      // 6, 2 and 0 open leads before; 10 more make 18: least loaded brings them to 6 each.
      expect([await agentOf(a.id), await agentOf(b.id), await agentOf(c.id)].map((x) => x.openLeads)).toEqual([
        6, 6, 6,
      ]);
    });

    it('refuses to route a closed lead (409) and an unknown one (404), and is for admins only', async () => {
      await newAgent();
      const lead = await newLead();
      await h.call(admin, 'PATCH', `/v1/leads/${lead.id}`, { status: 'closed_lost' });
      expect((await route(lead.id)).json()).toMatchObject({ code: 'conflict' });
      expect((await route('lead_ghost')).statusCode).toBe(404);
      expect((await h.call(integration, 'POST', `/v1/leads/${lead.id}/route`)).statusCode).toBe(403);
    });
  });

  it('gives back a capacity slot left by a process that died between taking it and writing the lead, and only that one', async () => {
    let now = new Date('2025-06-01T10:00:00.000Z');
    await h.close();
    h = await startLeads({ clock: () => now });
    const agent = await newAgent({ capacity: 2 });
    const lead = await newLead();
    expect((await route(lead.id)).json().agentId).toBe(agent.id);
    // What a reservation leaves when the process dies before the lead write: a slot no lead holds.
    const agents = await h.store.collection<{ id: string }>('agents');
    await agents.updateOne(
      { id: agent.id },
      { $inc: { openLeads: 1 }, $push: { slots: `${now.getTime().toString(36)}-orphan` } },
    );
    expect((await agentOf(agent.id)).openLeads).toBe(2);
    expect((await route((await newLead()).id)).statusCode).toBe(409);
    // Within the grace period nothing is touched (it could be a routing in flight).
    expect(await h.runtime.agents.auditSlots()).toBe(0);
    now = new Date(now.getTime() + 11 * 60_000);
    expect(await h.runtime.agents.auditSlots()).toBe(1);
    expect((await agentOf(agent.id)).openLeads).toBe(1);
    expect(await h.runtime.agents.auditSlots()).toBe(0);
    expect((await route((await newLead()).id)).json().agentId).toBe(agent.id);
  });

  describe('preview and autoRoute', () => {
    it('previews who would get a lead (a body or a leadId) without assigning or taking a turn', async () => {
      const [a, b] = [await newAgent(), await newAgent()];
      const z = await rule({ strategy: 'round_robin', agentIds: [a.id, b.id], conditions: { sources: ['zillow'] } });
      const preview = await h.call(admin, 'POST', '/v1/routing/preview', { source: 'Zillow', email: 'x@example.com' });
      expect(preview.json()).toMatchObject({
        agentId: a.id,
        ruleId: z.id,
        strategy: 'round_robin',
        steps: [{ ruleId: z.id, outcome: 'chosen' }],
      });
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { source: 'Zillow' })).json().agentId).toBe(a.id);
      const lead = await newLead({ source: 'zillow' });
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { leadId: lead.id })).json().agentId).toBe(a.id);
      expect((await h.call(admin, 'GET', `/v1/leads/${lead.id}`)).json().agentId).toBeNull();
      expect((await agentOf(a.id)).openLeads).toBe(0);
      expect((await route(lead.id)).json().agentId).toBe(a.id);
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { leadId: lead.id })).json().agentId).toBe(b.id);

      const web = (await h.call(admin, 'POST', '/v1/routing/preview', { source: 'website' })).json();
      expect(web.steps[0]).toMatchObject({
        ruleId: z.id,
        outcome: 'not_matched',
        detail: 'source website is not one of zillow',
      });
      await h.call(admin, 'PATCH', `/v1/agents/${a.id}`, { active: false });
      await h.call(admin, 'PATCH', `/v1/agents/${b.id}`, { active: false });
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { source: 'zillow' })).json()).toMatchObject({
        agentId: null,
        reason: expect.stringContaining('No eligible agent'),
      });
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { leadId: lead.id, source: 'x' })).statusCode).toBe(
        422,
      );
      expect((await h.call(admin, 'POST', '/v1/routing/preview', { leadId: 'lead_ghost' })).statusCode).toBe(404);
    });

    it('routes on capture with autoRoute, keeps a duplicate with its agent, and still captures when nobody is available', async () => {
      const read = async (id: string) => (await h.call(admin, 'GET', `/v1/leads/${id}`)).json();
      // A website form (integration key) learns only that the lead is in; the pipeline shows the rest.
      const nobody = await h.call(integration, 'POST', '/v1/leads', {
        name: 'Early',
        email: 'early@example.com',
        autoRoute: true,
      });
      expect(nobody.statusCode).toBe(201);
      expect(nobody.json()).toEqual({ id: expect.any(String), duplicate: false });
      expect(await read(nobody.json().id)).toMatchObject({ agentId: null });
      const a = await newAgent();
      const routed = await h.call(integration, 'POST', '/v1/leads', {
        name: 'Web',
        email: 'web@example.com',
        autoRoute: true,
      });
      expect(routed.json()).toEqual({ id: expect.any(String), duplicate: false });
      expect(await read(routed.json().id)).toMatchObject({ agentId: a.id, assignment: { strategy: 'round_robin' } });
      const again = await h.call(integration, 'POST', '/v1/leads', {
        name: 'Web',
        email: 'web@example.com',
        autoRoute: true,
      });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual({ id: routed.json().id, duplicate: true });
      // An admin capture says what routing did.
      const byAdmin = await h.call(admin, 'POST', '/v1/leads', {
        name: 'Web',
        email: 'web@example.com',
        autoRoute: true,
      });
      expect(byAdmin.json()).toMatchObject({
        id: routed.json().id,
        duplicate: true,
        agentId: a.id,
        routing: { outcome: 'already_assigned' },
      });
      expect((await agentOf(a.id)).openLeads).toBe(1);
      const plain = await h.call(admin, 'POST', '/v1/leads', { name: 'Plain', email: 'plain@example.com' });
      expect(plain.json()).not.toHaveProperty('routing');
      const early = await h.call(admin, 'POST', '/v1/leads', {
        name: 'Late',
        email: 'late@example.com',
        autoRoute: true,
      });
      expect(early.json()).toMatchObject({ routing: { outcome: 'assigned' } });
    });
  });
});
