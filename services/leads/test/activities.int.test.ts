import { randomUUID } from 'node:crypto';
import { Unprocessable } from '@estate/bus';
import type { EventPayload } from '@estate/contracts/events';
import type { Activity, Lead } from '@estate/contracts/leads';
import { eventually } from '@estate/testing';
import { ActivityRepository } from '../src/repositories/activity.repository';
import { admin, agentKey, integration, startLeads, type LeadsHarness } from './harness';

type Body = Record<string, unknown>;
type Command = EventPayload<'leads.activity.record'>;

describe('activities over HTTP and the bus (embedded adapters)', () => {
  let h: LeadsHarness;
  let lead: Lead;

  const post = (body: Body, who = admin, id = lead.id) => h.call(who, 'POST', `/v1/leads/${id}/activities`, body);
  const list = async (query = '', who = admin) =>
    (await h.call(who, 'GET', `/v1/leads/${lead.id}/activities${query}`)).json();
  const command = (
    eventId: string,
    activity: Command['activity'] = { type: 'property_view', summary: 'Viewed 1 Main St' },
    leadId = lead.id,
  ): Command => ({
    eventId,
    accountId: 'acc_alice',
    leadId,
    version: 1,
    occurredAt: '2025-01-05T10:00:00.000Z',
    source: 'portal-bridge',
    activity,
  });

  beforeEach(async () => {
    h = await startLeads();
    lead = (await h.call(admin, 'POST', '/v1/leads', { name: 'Tim Line', email: 'tim@example.com' })).json();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await h.close();
  });

  it('records client activities with their actor, keeps the timeline newest first by occurredAt, and updates the lead', async () => {
    const call = await post({
      type: 'call',
      summary: 'Left a voicemail',
      data: { durationSec: 35 },
      listingId: 'lst_1',
      occurredAt: '2025-01-03T09:00:00+02:00',
    });
    expect(call.statusCode).toBe(201);
    expect(call.json()).toMatchObject({
      id: expect.stringMatching(/^act_/),
      leadId: lead.id,
      type: 'call',
      customType: null,
      occurredAt: '2025-01-03T07:00:00.000Z',
      summary: 'Left a voicemail',
      data: { durationSec: 35 },
      listingId: 'lst_1',
      actor: { type: 'api_key', id: 'key_acc_alice_admin', agentId: null },
    });
    await post({ type: 'custom', customType: 'sms', summary: 'texted', occurredAt: '2025-01-04T00:00:00Z' });
    await post({ type: 'note', summary: 'older note', occurredAt: '2025-01-01T00:00:00Z' });
    await post({ type: 'email' }, integration);
    const all = await list();
    // Score changes are on the timeline too, at the moment the score moved.
    const own = all.items.filter((a: Activity) => a.type !== 'score_change');
    expect(own.map((a: Activity) => a.type)).toEqual(['email', 'inquiry', 'custom', 'call', 'note']);
    expect(all.total).toBe(all.items.length);
    expect(own[0].actor).toEqual({ type: 'api_key', id: 'key_acc_alice_integration', agentId: null });
    expect(own[2]).toMatchObject({ customType: 'sms' });

    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(...page.items.map((a: Activity) => a.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages).toEqual(all.items.map((a: Activity) => a.id));
    expect((await list('?type=call,note')).items.map((a: Activity) => a.type)).toEqual(['call', 'note']);

    const after = (await h.call(admin, 'GET', `/v1/leads/${lead.id}`)).json() as Lead;
    expect(after.lastActivityAt).toBe(own[0].occurredAt);
    expect(after.latestActivities).toEqual(
      all.items.slice(0, 5).map(({ id, type, customType, occurredAt, summary, listingId }: Activity) => ({
        id,
        type,
        customType,
        occurredAt,
        summary,
        listingId,
      })),
    );
    await h.runtime.relay.flush();
    const recorded = h.events
      .filter((e) => e.subject === 'leads.activity.recorded')
      .map((e) => (e.payload as { activity: Activity }).activity.type);
    expect(recorded).toEqual(expect.arrayContaining(['inquiry', 'call', 'custom', 'note', 'email']));
  });

  it('refuses bad activities: system types, customType rules, future dates, unknown fields (422), data over 16 KB (413)', async () => {
    const cases: [Body, number, string?][] = [
      [{ type: 'status_change' }, 422, 'type'],
      [{ type: 'inquiry' }, 422, 'type'],
      [{ type: 'custom' }, 422, 'customType'],
      [{ type: 'call', customType: 'x' }, 422, 'customType'],
      [{ type: 'call', occurredAt: new Date(Date.now() + 3_600_000).toISOString() }, 422, 'occurredAt'],
      [{ type: 'call', occurredAt: 'yesterday' }, 422, 'occurredAt'],
      [{ type: 'call', colour: 'red' }, 422, 'colour'],
      [{ type: 'call', data: [1, 2] }, 422, 'data'],
      [{ type: 'call', data: { 'a.b': 1 } }, 422, 'data.a.b'],
      [{ type: 'call', data: { nested: { $where: 1 } } }, 422, 'data.nested.$where'],
      [{ type: 'call', data: { blob: 'x'.repeat(16 * 1024) } }, 413],
    ];
    for (const [body, status, path] of cases) {
      const res = await post(body);
      expect({
        body: JSON.stringify(body).slice(0, 60),
        status: res.statusCode,
        path: res.json().errors?.[0]?.path,
      }).toEqual({ body: JSON.stringify(body).slice(0, 60), status, path });
    }
    // Nested deeper than any timeline needs: refused before anything walks it (a 5,000-deep body once gave 500).
    const nested = (depth: number) => `{"type":"call","data":{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    for (const [depth, path] of [
      [5000, `data.deep${'.0'.repeat(62)}`],
      [40, `data.deep${'.0'.repeat(31)}`],
    ] as const) {
      const res = await h.call(admin, 'POST', `/v1/leads/${lead.id}/activities`, nested(depth), {
        'content-type': 'application/json',
      });
      expect({ status: res.statusCode, path: res.json().errors?.[0]?.path }).toEqual({ status: 422, path });
    }
    expect((await post({ type: 'call', data: { blob: 'x'.repeat(16 * 1024 - 20) } })).statusCode).toBe(201);
    expect((await list('?type=call,inquiry')).total).toBe(2);
    expect((await post({ type: 'call' }, admin, 'lead_ghost')).statusCode).toBe(404);
  });

  it('lets integrations record but not read timelines, and agents only on their own leads', async () => {
    expect((await post({ type: 'form_submission' }, integration)).statusCode).toBe(201);
    expect((await h.call(integration, 'GET', `/v1/leads/${lead.id}/activities`)).statusCode).toBe(403);
    const agent = (await h.call(admin, 'POST', '/v1/agents', { name: 'A', email: 'a@example.com' })).json();
    expect((await post({ type: 'call' }, agentKey(agent.id))).statusCode).toBe(404);
    await h.call(admin, 'PATCH', `/v1/leads/${lead.id}`, { agentId: agent.id });
    const mine = await post({ type: 'call' }, agentKey(agent.id));
    expect(mine.json().actor).toEqual({ type: 'api_key', id: `key_acc_alice_agent`, agentId: agent.id });
    expect((await h.call(agentKey(agent.id), 'GET', `/v1/leads/${lead.id}/activities`)).statusCode).toBe(200);
  });

  it('records a leads.activity.record command once, however many times it is delivered', async () => {
    const eventId = randomUUID();
    await h.bus.publish('leads.activity.record', command(eventId));
    // Redelivered beyond the bus's duplicate window (a new message id, the same event id).
    await h.bus.publish('leads.activity.record', command(eventId), { msgId: `${eventId}-again` });
    await h.bus.publish('leads.activity.record', command(randomUUID(), { type: 'email', summary: 'marker' }));
    await eventually(async () => expect((await list()).items.map((a: Activity) => a.summary)).toContain('marker'), {
      timeoutMs: 30_000,
    });
    const views = (await list()).items.filter((a: Activity) => a.type === 'property_view');
    expect(views).toHaveLength(1);
    expect(views[0]).toMatchObject({
      occurredAt: '2025-01-05T10:00:00.000Z',
      actor: { type: 'service', id: 'portal-bridge', agentId: null },
    });
    // Two deliveries racing each other (two replicas) still record it once.
    const racing = randomUUID();
    const outcomes = await Promise.all([
      h.runtime.activities.recordFromBus(command(racing, { type: 'call' })),
      h.runtime.activities.recordFromBus(command(racing, { type: 'call' })),
    ]);
    expect(outcomes.sort()).toEqual(['duplicate', 'recorded']);
    expect((await list('?type=call')).total).toBe(1);
    const lead2 = (await h.call(admin, 'GET', `/v1/leads/${lead.id}`)).json() as Lead;
    expect(lead2.scoreBreakdown.components.engagement.detail).toContain('1 × call');
  });

  it('drops commands that can never succeed (unknown lead, oversized data) without touching anything', async () => {
    await expect(
      h.runtime.activities.recordFromBus(command(randomUUID(), { type: 'call' }, 'lead_ghost')),
    ).rejects.toBeInstanceOf(Unprocessable);
    await expect(
      h.runtime.activities.recordFromBus(command(randomUUID(), { type: 'call', data: { x: 'y'.repeat(17_000) } })),
    ).rejects.toBeInstanceOf(Unprocessable);
    expect((await list()).total).toBe(1);
  });

  it('drops a command naming an account that does not own the lead, and the lead stays as it was', async () => {
    const before = (await h.call(admin, 'GET', `/v1/leads/${lead.id}`)).json() as Lead;
    const foreign = { ...command(randomUUID(), { type: 'call', summary: 'forged' }), accountId: 'acc_mallory' };
    await expect(h.runtime.activities.recordFromBus(foreign)).rejects.toBeInstanceOf(Unprocessable);
    expect((await list()).items.map((a: Activity) => a.summary)).not.toContain('forged');
    expect((await h.call(admin, 'GET', `/v1/leads/${lead.id}`)).json()).toEqual(before);
  });

  it('brings an activity to the timeline from its event when the direct write did not happen (no transactions)', async () => {
    // Where the lead and its timeline entry cannot commit together (MongoDB), the entry travels in the lead's outbox too.
    await h.close();
    h = await startLeads({ transactions: false });
    lead = (await h.call(admin, 'POST', '/v1/leads', { name: 'Tim Line', email: 'tim@example.com' })).json();
    const insert = jest.spyOn(ActivityRepository.prototype, 'insertIfAbsent');
    insert.mockRejectedValueOnce(new Error('store hiccup'));
    const res = await post({ type: 'call', summary: 'survives' });
    expect(res.statusCode).toBe(201);
    // The lead write carried the activity in its outbox; the relay's event lands it on the timeline.
    await h.runtime.relay.flush();
    await eventually(async () => expect((await list()).items.map((a: Activity) => a.summary)).toContain('survives'), {
      timeoutMs: 30_000,
    });
    expect((await list()).items.filter((a: Activity) => a.summary === 'survives')).toHaveLength(1);
  });
});
