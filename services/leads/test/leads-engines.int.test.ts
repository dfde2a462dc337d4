import { randomBytes, randomUUID } from 'node:crypto';
import { natsConnectOptions, NatsBus } from '@estate/bus/nats.bus';
import { type Bus } from '@estate/bus';
import type { Agent, Lead } from '@estate/contracts/leads';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { describeWithEngines, eventually, identityFor } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { listing, log, publishListing, startLeads, type LeadsHarness } from './harness';

/**
 * The leads service on MongoDB and NATS JetStream, as two replicas sharing one database (two store
 * connections, two NATS connections, two HTTP apps), so that what must hold across replicas is
 * shown on the real engines: round robin fairness, capacity, de-duplication, exactly-once commands.
 */
describeWithEngines('leads service on MongoDB + NATS, two replicas', ['MONGODB_URL', 'NATS_URL'], (urls) => {
  const run = randomBytes(6).toString('hex');
  const dbName = `leads_it_${run}`;
  // A namespace of its own: fresh streams, no other run's events or consumers.
  const namespace = `leads_it_${run}`;
  const admin = identityFor(`acc_${randomBytes(6).toString('hex')}`);
  const replicas: LeadsHarness[] = [];
  const stores: MongoDocumentStore[] = [];
  const buses: Bus[] = [];
  let seq = 0;

  const call = (i: number, method: string, url: string, body?: unknown) =>
    replicas[i % 2].call(admin, method, url, body);
  const newAgent = async (body: Record<string, unknown> = {}): Promise<Agent> =>
    (await call(0, 'POST', '/v1/agents', { name: `A${++seq}`, email: `a${seq}@example.com`, ...body })).json();
  const newLead = async (i: number, body: Record<string, unknown> = {}): Promise<Lead> => {
    const res = await call(i, 'POST', '/v1/leads', { name: `L${++seq}`, email: `l${seq}@example.com`, ...body });
    expect(res.statusCode).toBe(201);
    return res.json();
  };

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const store = await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, log });
      const bus = await NatsBus.connect(urls.NATS_URL, {
        log,
        name: `leads-it-${i}`,
        namespace,
        retryBaseMs: 50,
        consumerInactiveThresholdMs: 10 * 60 * 1000,
      });
      stores.push(store);
      buses.push(bus);
      replicas.push(await startLeads({ store, bus, record: i === 0 }));
    }
  }, 60_000);

  afterAll(async () => {
    for (const r of replicas) await r.close();
    for (const b of buses) await b.close();
    const nc = await connect({ ...natsConnectOptions(urls.NATS_URL), name: 'leads-it-cleanup' });
    try {
      const jsm = await jetstreamManager(nc);
      for await (const stream of jsm.streams.list()) {
        if (stream.config.name.startsWith(`${namespace}_`)) await jsm.streams.delete(stream.config.name);
      }
    } finally {
      await nc.close();
    }
    await stores[0].dropDatabase();
    for (const s of stores) await s.close();
  }, 60_000);

  it('is exactly fair under 30 concurrent routings over 3 agents, spread over both replicas: 10 each', async () => {
    const agents = [await newAgent(), await newAgent(), await newAgent()];
    const rule = (
      await call(1, 'POST', '/v1/routing/rules', {
        name: 'all',
        priority: 1,
        strategy: 'round_robin',
        agentIds: agents.map((a) => a.id),
      })
    ).json();
    const leads = await Promise.all(Array.from({ length: 30 }, (_, i) => newLead(i)));
    const results = await Promise.all(leads.map((l, i) => call(i, 'POST', `/v1/leads/${l.id}/route`)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
    const counts = Object.fromEntries(
      agents.map((a) => [a.id, results.filter((r) => r.json().agentId === a.id).length]),
    );
    expect(counts).toEqual(Object.fromEntries(agents.map((a) => [a.id, 10])));
    for (const a of agents) expect((await call(1, 'GET', `/v1/agents/${a.id}`)).json().openLeads).toBe(10);
    await call(0, 'DELETE', `/v1/routing/rules/${rule.id}`);
    for (const l of leads) await call(0, 'PATCH', `/v1/leads/${l.id}`, { status: 'closed_lost' });
    for (const a of agents) expect((await call(0, 'GET', `/v1/agents/${a.id}`)).json().openLeads).toBe(0);
    for (const a of agents) expect((await call(0, 'DELETE', `/v1/agents/${a.id}`)).statusCode).toBe(200);
  }, 180_000);

  it('never fills an agent past its capacity under concurrent routing across replicas', async () => {
    const agents = [await newAgent({ capacity: 2 }), await newAgent({ capacity: 2 }), await newAgent({ capacity: 2 })];
    const leads = await Promise.all(Array.from({ length: 10 }, (_, i) => newLead(i)));
    const results = await Promise.all(leads.map((l, i) => call(i, 'POST', `/v1/leads/${l.id}/route`)));
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(6);
    expect(results.filter((r) => r.statusCode === 409).map((r) => r.json().code)).toEqual(
      Array(4).fill('no_agent_available'),
    );
    for (const a of agents) expect((await call(0, 'GET', `/v1/agents/${a.id}`)).json().openLeads).toBe(2);
  }, 120_000);

  it('captures the same person sent to both replicas at once as one lead', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call(i, 'POST', '/v1/leads', { name: 'Twin', phone: i % 2 ? '+1 512 555 0188' : '(512) 555-0188' }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.json().id)).size).toBe(1);
    const page = (await call(1, 'GET', '/v1/leads?q=twin')).json();
    expect(page.total).toBe(1);
  });

  it('records a leads.activity.record command from NATS once, delivered twice', async () => {
    const lead = await newLead(0);
    const eventId = randomUUID();
    const cmd = {
      eventId,
      accountId: admin.accountId,
      leadId: lead.id,
      version: 1,
      occurredAt: new Date().toISOString(),
      source: 'it',
      activity: { type: 'call' as const, summary: 'twice' },
    };
    await buses[0].publish('leads.activity.record', cmd);
    await buses[1].publish('leads.activity.record', cmd, { msgId: `${eventId}-redelivered` });
    await buses[0].publish('leads.activity.record', {
      ...cmd,
      eventId: randomUUID(),
      activity: { type: 'email', summary: 'marker' },
    });
    // A work queue drops a message once it is acknowledged: empty means all three were handled.
    const nc = await connect({ ...natsConnectOptions(urls.NATS_URL), name: 'leads-it-probe' });
    try {
      const jsm = await jetstreamManager(nc);
      await eventually(
        async () => expect((await jsm.streams.info(`${namespace}_LEADS_COMMANDS`)).state.messages).toBe(0),
        { timeoutMs: 30_000 },
      );
    } finally {
      await nc.close();
    }
    const timeline = (await call(1, 'GET', `/v1/leads/${lead.id}/activities?type=call,email`))
      .json()
      .items.map((a: { summary: string }) => a.summary);
    expect(timeline.sort()).toEqual(['marker', 'twice']);
  }, 45_000);

  it('keeps listing summaries from listing events on NATS, and publishes its own events there', async () => {
    const listingId = `lst_${randomBytes(6).toString('hex')}`;
    await publishListing(buses[1], admin.accountId, listing(listingId, { listPrice: 777000 }));
    const lead = await newLead(1, { propertyInterests: [{ listingId }] });
    await eventually(
      async () =>
        expect((await call(0, 'GET', `/v1/leads/${lead.id}`)).json().propertyInterests[0].listing).toMatchObject({
          id: listingId,
          price: { listPrice: 777000 },
        }),
      { timeoutMs: 30_000 },
    );
    await eventually(
      async () =>
        expect(replicas[0].events.filter((e) => e.payload.leadId === lead.id).map((e) => e.subject)).toEqual(
          expect.arrayContaining(['leads.lead.created', 'leads.activity.recorded']),
        ),
      { timeoutMs: 15_000 },
    );
  }, 45_000);
});
