import { eventually } from '@estate/testing';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

/** Event types of the lead pipeline. */
const PIPELINE = ['lead.created', 'lead.updated', 'lead.assigned', 'lead.status_changed', 'activity.created'];

describe('attacks on the lead pipeline by keys that may not read it', () => {
  let t: Target;
  beforeEach(async () => {
    t = await startTarget();
  });
  afterEach(() => t.close());

  it("an integration key's change feed carries listing, media and job events, never a lead or an activity", async () => {
    const lead = await t.lead(ADMIN, { name: 'Private Person', email: 'private.person@example.com' });
    const note = await t.call(ADMIN, 'POST', `/v1/leads/${lead.id}/activities`, {
      type: 'note',
      summary: 'pre-approved up to 2M',
    });
    expect(note.statusCode).toBe(201);
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { status: 'contacted' })).statusCode).toBe(200);
    const listing = await t.listing(ADMIN);
    const integration = await t.key(ADMIN, 'integration');

    // The admin's feed holds the pipeline in full, so the events are there to be read.
    const adminFeed = await eventually(async () => {
      const page = (await t.call(ADMIN, 'GET', '/v1/events?limit=100')).json();
      const types = page.items.map((e: { type: string }) => e.type);
      expect(types).toEqual(expect.arrayContaining(['lead.created', 'activity.created', 'listing.created']));
      return page;
    });
    expect(JSON.stringify(adminFeed)).toContain('private.person@example.com');

    // Asked by name, lead and activity events are refused before anything is read.
    for (const types of [PIPELINE.join(','), 'listing.created,lead.updated', 'activity.created']) {
      const res = await t.call(integration.secret, 'GET', `/v1/events?types=${types}`);
      expectProblem(res, 403, 'forbidden');
      expect(res.body).not.toMatch(/Private Person|private\.person|pre-approved/);
    }
    // Unfiltered, the feed carries everything else and nothing of the pipeline.
    const feed = (await t.call(integration.secret, 'GET', '/v1/events?limit=100')).json();
    const types = feed.items.map((e: { type: string }) => e.type);
    expect(types).toContain('listing.created');
    expect(types.filter((type: string) => PIPELINE.includes(type))).toEqual([]);
    expect(feed.items.find((e: { type: string }) => e.type === 'listing.created').data.id).toBe(listing.id);
    expect(JSON.stringify(feed)).not.toMatch(/Private Person|private\.person|pre-approved|led_/);
    // Its cursor moves past the pipeline's events: the next page is empty, not a replay.
    const next = (await t.call(integration.secret, 'GET', `/v1/events?after=${feed.nextCursor}`)).json();
    expect(next.items).toEqual([]);

    // Webhook endpoints are an admin's to create, and may carry the pipeline in full.
    const hook = await t.call(ADMIN, 'POST', '/v1/webhooks', {
      url: 'https://crm.example.com/hooks/estate',
      events: ['lead.created', 'activity.created'],
    });
    expect(hook.statusCode).toBe(201);
    expectProblem(
      await t.call(integration.secret, 'POST', '/v1/webhooks', { url: 'https://x.example.com/h', events: ['*'] }),
      403,
      'forbidden',
    );
  });

  it('an agent learns nothing about contacts of leads it cannot see: a taken and an unused email or phone answer alike', async () => {
    const ana = await t.agent(ADMIN);
    const anaKey = await t.key(ADMIN, 'agent', ana.id);
    const mine = await t.lead(ADMIN, { phone: '+15125550100' });
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${mine.id}`, { agentId: ana.id })).statusCode).toBe(200);
    const hidden = await t.lead(ADMIN, { email: 'hidden.person@example.com', phone: '+15125550142' });
    const before = (await t.call(ADMIN, 'GET', `/v1/leads/${mine.id}`)).json();

    /** The answer with what differs between two requests by nature (its id) left out. */
    const answer = async (patch: Record<string, unknown>) => {
      const res = await t.call(anaKey.secret, 'PATCH', `/v1/leads/${mine.id}`, patch);
      return { status: res.statusCode, body: { ...res.json(), requestId: undefined } };
    };
    for (const [taken, unused] of [
      [{ phone: '+15125550142' }, { phone: '+15125550199' }],
      [{ phone: '(512) 555-0142' }, { phone: '(512) 555-0199' }],
      [{ email: 'hidden.person@example.com' }, { email: 'nobody.yet@example.com' }],
      [
        { email: 'HIDDEN.person@example.com', phone: '+15125550142' },
        { email: 'n@example.com', phone: '+15125550199' },
      ],
    ]) {
      const a = await answer(taken);
      const b = await answer(unused);
      expect(a).toEqual(b);
      expect(a.status).toBe(403);
      expect(JSON.stringify(a.body)).not.toMatch(/hidden|0142|led_|exists/);
    }
    // Its own lead's unchanged contacts may be sent back with a change of other fields.
    const same = await t.call(anaKey.secret, 'PATCH', `/v1/leads/${mine.id}`, {
      phone: '+15125550100',
      status: 'contacted',
    });
    expect(same.statusCode).toBe(200);
    const after = (await t.call(ADMIN, 'GET', `/v1/leads/${mine.id}`)).json();
    expect({ email: after.email, phone: after.phone }).toEqual({ email: before.email, phone: before.phone });
    expect((await t.call(ADMIN, 'GET', `/v1/leads/${hidden.id}`)).json().phone).toBe('+15125550142');
    // An admin, who reads every lead, is told which lead has the contact.
    const admin = await t.call(ADMIN, 'PATCH', `/v1/leads/${mine.id}`, { phone: '+15125550142' });
    expectProblem(admin, 409, 'lead_exists');
    expect(admin.json().existingId).toBe(hidden.id);
  });

  it("an agent's manual score on its own lead is on the timeline with the agent's key, and an admin can hand it back", async () => {
    const ana = await t.agent(ADMIN);
    const anaKey = await t.key(ADMIN, 'agent', ana.id);
    const lead = await t.lead(ADMIN);
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { agentId: ana.id })).statusCode).toBe(200);
    const set = await t.call(anaKey.secret, 'PATCH', `/v1/leads/${lead.id}`, { score: 100 });
    expect(set.json()).toMatchObject({ score: 100, scoreSource: 'manual' });
    const timeline = (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}/activities`)).json().items;
    const change = timeline.find((a: { type: string }) => a.type === 'score_change');
    expect(change).toMatchObject({
      data: { to: 100, scoreSource: 'manual' },
      actor: { type: 'api_key', id: anaKey.id, agentId: ana.id },
    });
    const back = await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { score: null });
    expect(back.json().scoreSource).toBe('engine');
    expect(back.json().score).toBeLessThan(100);
  });
});
