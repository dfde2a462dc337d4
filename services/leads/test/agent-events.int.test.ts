import { randomBytes } from 'node:crypto';
import type { BusMessage } from '@estate/bus';
import { admin, otherAccount, startLeads, type LeadsHarness } from './harness';

type AgentEvent = BusMessage<'leads.agent.updated' | 'leads.agent.deleted'>;

describe('agent events (what the gateway revokes agent keys by)', () => {
  let h: LeadsHarness;
  let events: AgentEvent[];
  let stop: () => Promise<void>;
  beforeEach(async () => {
    h = await startLeads();
    events = [];
    const sub = await h.bus.subscribe(
      ['leads.agent.updated', 'leads.agent.deleted'],
      { durable: `test-agents-${randomBytes(4).toString('hex')}` },
      async (m) => void events.push(m),
    );
    stop = () => sub.stop();
  });
  afterEach(async () => {
    await stop();
    await h.close();
  });

  const newAgent = async () => {
    const res = await h.call(admin, 'POST', '/v1/agents', { name: 'Ana', email: 'ana@example.com', capacity: 2 });
    expect(res.statusCode).toBe(201);
    return res.json() as { id: string };
  };
  const seen = () =>
    events.map((e) => ({ subject: e.subject, ...e.payload, eventId: undefined, occurredAt: undefined }));

  it('publishes an update naming the changed fields and whether the agent is active, and a deletion', async () => {
    const { id } = await newAgent();
    expect((await h.call(admin, 'PATCH', `/v1/agents/${id}`, { capacity: 5, areas: ['78701'] })).statusCode).toBe(200);
    expect((await h.call(admin, 'PATCH', `/v1/agents/${id}`, { active: false })).statusCode).toBe(200);
    // A patch that changes nothing publishes nothing.
    expect((await h.call(admin, 'PATCH', `/v1/agents/${id}`, { active: false })).statusCode).toBe(200);
    expect((await h.call(admin, 'DELETE', `/v1/agents/${id}`)).statusCode).toBe(200);
    await h.runtime.relay.flush();
    const base = { accountId: 'acc_alice', agentId: id, eventId: undefined, occurredAt: undefined };
    expect(seen()).toEqual([
      { subject: 'leads.agent.updated', ...base, version: 2, active: true, changes: ['capacity', 'areas'] },
      { subject: 'leads.agent.updated', ...base, version: 3, active: false, changes: ['active'] },
      { subject: 'leads.agent.deleted', ...base, version: 5 },
    ]);
    // The tombstone is gone once its event is out, and never shown meanwhile.
    expect((await h.call(admin, 'GET', `/v1/agents/${id}`)).statusCode).toBe(404);
    expect((await h.call(admin, 'GET', '/v1/agents')).json().total).toBe(0);
    expect(await (await h.store.collection<{ id: string }>('agents')).findOne({ id })).toBeNull();
  });

  it('publishes nothing for a refused change: another account, an agent with open leads, a version mismatch', async () => {
    const { id } = await newAgent();
    expect((await h.call(otherAccount, 'PATCH', `/v1/agents/${id}`, { active: false })).statusCode).toBe(404);
    expect((await h.call(otherAccount, 'DELETE', `/v1/agents/${id}`)).statusCode).toBe(404);
    expect((await h.call(admin, 'DELETE', `/v1/agents/${id}`, undefined, { 'if-match': '"7"' })).statusCode).toBe(412);
    const lead = await h.call(admin, 'POST', '/v1/leads', { name: 'L', email: 'l@example.com', source: 'web' });
    expect((await h.call(admin, 'PATCH', `/v1/leads/${lead.json().id}`, { agentId: id })).statusCode).toBe(200);
    expect((await h.call(admin, 'DELETE', `/v1/agents/${id}`)).statusCode).toBe(409);
    await h.runtime.relay.flush();
    expect(events).toEqual([]);
    expect((await h.call(admin, 'GET', `/v1/agents/${id}`)).json()).toMatchObject({ active: true, openLeads: 1 });
  });
});
