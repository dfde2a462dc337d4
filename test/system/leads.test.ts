import { randomBytes, randomUUID } from 'node:crypto';
import { NatsBus } from '@estate/bus/nats.bus';
import { describeWithEngines, listingBody } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import mongoose from 'mongoose';
import pino from 'pino';
import { buildDist, dropNatsNamespace, dropSearchIndex, eventually, freePort, searchEnv, startService, stopAll, waitReady, type RunningService } from './processes';

/**
 * Tier 3: leads in the distributed profile. Two leads replicas share one database; two gateways
 * each forward to one of them, so requests spread over both replicas as a load balancer would
 * spread them. Everything is driven through the gateways over HTTP, and over NATS where other
 * services would publish.
 */
describeWithEngines('leads through the gateway (separate processes, two leads replicas, MongoDB, NATS)', ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'], (urls) => {
  const run = randomBytes(4).toString('hex');
  const namespace = `sys_${run}`;
  const platform = `ek_system_platform_${randomBytes(16).toString('hex')}`;
  const secret = randomBytes(32).toString('hex');
  const services: RunningService[] = [];
  const databases = ['gateway', 'listings', 'media', 'leads'].map((s) => `sysleads_${run}_${s}`);
  const gateways: string[] = [];
  let bus: NatsBus;

  const api = async (key: string, method: string, path: string, body?: unknown, via = 0) => {
    const res = await fetch(`${gateways[via % 2]}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  /** A fresh account per test: its agents, rules and turns are its own. */
  const account = async (): Promise<string> => (await newAccount()).admin;
  const newAccount = async (): Promise<{ id: string; admin: string }> => {
    const res = await api(platform, 'POST', '/v1/accounts', { name: `Leads ${run} ${randomBytes(3).toString('hex')}` });
    expect(res.status).toBe(201);
    return { id: res.body.account.id, admin: res.body.adminKey.secret };
  };

  beforeAll(async () => {
    buildDist();
    const ports = { listings: await freePort(), media: await freePort(), leadsA: await freePort(), leadsB: await freePort(), gatewayA: await freePort(), gatewayB: await freePort() };
    const common = { MONGODB_URL: urls.MONGODB_URL, NATS_URL: urls.NATS_URL, NATS_NAMESPACE: namespace, INTERNAL_SIGNING_SECRET: secret, LOG_LEVEL: 'warn', ...searchEnv(urls.ELASTICSEARCH_URL, run) };
    services.push(startService('listings', { ...common, PORT: String(ports.listings), MONGODB_DATABASE: `sysleads_${run}_listings` }));
    services.push(startService('media', { ...common, PORT: String(ports.media), MONGODB_DATABASE: `sysleads_${run}_media` }));
    for (const port of [ports.leadsA, ports.leadsB]) services.push(startService('leads', { ...common, PORT: String(port), MONGODB_DATABASE: `sysleads_${run}_leads` }));
    for (const [port, leads] of [[ports.gatewayA, ports.leadsA], [ports.gatewayB, ports.leadsB]]) {
      services.push(
        startService('gateway', {
          ...common,
          PORT: String(port),
          MONGODB_DATABASE: `sysleads_${run}_gateway`,
          LISTINGS_URL: `http://127.0.0.1:${ports.listings}`,
          MEDIA_URL: `http://127.0.0.1:${ports.media}`,
          LEADS_URL: `http://127.0.0.1:${leads}`,
          PLATFORM_API_KEY: platform,
        }),
      );
      gateways.push(`http://127.0.0.1:${port}`);
      // One after the other: the first makes the gateway database, the second finds it.
      await waitReady(gateways[gateways.length - 1], services, 60_000);
    }
    bus = await NatsBus.connect(urls.NATS_URL, { log: pino({ level: 'silent' }), name: 'sys-leads-test', namespace });
  }, 120_000);

  afterAll(async () => {
    if (process.env.DEBUG_SYS) for (const s of services) process.stderr.write(`--- ${s.name}\n${s.output().slice(-3000)}\n`);
    await bus?.close();
    await stopAll(services);
    await dropSearchIndex(urls.ELASTICSEARCH_URL, run);
    const conn = await mongoose.createConnection(urls.MONGODB_URL).asPromise();
    try {
      for (const db of databases) await conn.useDb(db).dropDatabase();
    } finally {
      await conn.close();
    }
    await dropNatsNamespace(urls.NATS_URL, namespace);
  }, 60_000);

  it('captures without duplicates across replicas and shows interests from the listing projection', async () => {
    const admin = await account();
    const listing = await api(admin, 'POST', '/v1/listings', listingBody({ pricing: { listPrice: 615000 } }));
    expect(listing.status).toBe(201);
    const first = await api(admin, 'POST', '/v1/leads', { name: 'Dana Cruz', email: 'Dana@Example.com', source: 'Zillow', propertyInterests: [{ listingId: listing.body.id }] }, 0);
    expect(first.status).toBe(201);
    expect(first.headers.get('etag')).toBe('"1"');
    const again = await api(admin, 'POST', '/v1/leads', { name: 'Dana', phone: '+1 512 555 0150', email: ' dana@example.com' }, 1);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, duplicate: true, phone: '+15125550150' });
    const byPhone = await api(admin, 'POST', '/v1/leads', { name: 'D', phone: '(512) 555-0150' }, 0);
    expect(byPhone.body).toMatchObject({ id: first.body.id, duplicate: true });
    await eventually(async () => {
      const read = await api(admin, 'GET', `/v1/leads/${first.body.id}`, undefined, 1);
      expect(read.body.propertyInterests[0].listing).toMatchObject({ id: listing.body.id, price: { listPrice: 615000 }, address: { city: 'Austin' } });
    }, 20_000);
    const timeline = await api(admin, 'GET', `/v1/leads/${first.body.id}/activities?type=inquiry`, undefined, 1);
    expect(timeline.body.total).toBe(3);
    expect((await api(admin, 'GET', '/v1/leads?q=dana')).body.total).toBe(1);
  }, 60_000);

  it('routes 30 leads at once over 3 agents through both replicas: exactly 10 each, capacity counted', async () => {
    const admin = await account();
    const agents: string[] = [];
    for (let i = 0; i < 3; i++) agents.push((await api(admin, 'POST', '/v1/agents', { name: `Agent ${i}`, email: `agent${i}@example.com` })).body.id);
    const leads = await Promise.all(Array.from({ length: 30 }, async (_, i) => (await api(admin, 'POST', '/v1/leads', { name: `Buyer ${i}`, email: `buyer${i}@example.com` }, i)).body.id as string));
    const routed = await Promise.all(leads.map((id, i) => api(admin, 'POST', `/v1/leads/${id}/route`, undefined, i)));
    expect(routed.map((r) => r.status)).toEqual(Array(30).fill(200));
    const counts = Object.fromEntries(agents.map((a) => [a, routed.filter((r) => r.body.agentId === a).length]));
    expect(counts).toEqual(Object.fromEntries(agents.map((a) => [a, 10])));
    for (const a of agents) expect((await api(admin, 'GET', `/v1/agents/${a}`)).body.openLeads).toBe(10);
    expect(routed[0].body.assignment).toMatchObject({ ruleId: null, strategy: 'round_robin', reason: expect.stringContaining('team default') });
  }, 120_000);

  it('holds capacity under concurrent routing and answers 409 no_agent_available when nobody is left', async () => {
    const admin = await account();
    for (let i = 0; i < 2; i++) await api(admin, 'POST', '/v1/agents', { name: `Small ${i}`, email: `small${i}@example.com`, capacity: 2 });
    const leads = await Promise.all(Array.from({ length: 7 }, async (_, i) => (await api(admin, 'POST', '/v1/leads', { name: `P ${i}`, email: `p${i}@example.com` }, i)).body.id as string));
    const routed = await Promise.all(leads.map((id, i) => api(admin, 'POST', `/v1/leads/${id}/route`, undefined, i)));
    expect(routed.filter((r) => r.status === 200)).toHaveLength(4);
    expect(routed.filter((r) => r.status === 409).map((r) => r.body.code)).toEqual(['no_agent_available', 'no_agent_available', 'no_agent_available']);
    const agents = (await api(admin, 'GET', '/v1/agents')).body.items;
    expect(agents.map((a: { openLeads: number }) => a.openLeads)).toEqual([2, 2]);
  }, 60_000);

  it('keeps agents to their own leads and integrations out of the pipeline', async () => {
    const admin = await account();
    const agent = (await api(admin, 'POST', '/v1/agents', { name: 'Solo', email: 'solo@example.com' })).body.id;
    const agentKey = (await api(admin, 'POST', '/v1/api-keys', { name: 'solo', role: 'agent', agentId: agent })).body.secret;
    const integrationKey = (await api(admin, 'POST', '/v1/api-keys', { name: 'site', role: 'integration' })).body.secret;
    const mine = await api(integrationKey, 'POST', '/v1/leads', { name: 'Mine', email: 'mine@example.com', autoRoute: true });
    expect(mine.body).toMatchObject({ agentId: agent, routing: { outcome: 'assigned' } });
    const other = await api(admin, 'POST', '/v1/leads', { name: 'Other', email: 'other@example.com' });
    expect((await api(integrationKey, 'GET', '/v1/leads')).status).toBe(403);
    expect((await api(agentKey, 'GET', '/v1/leads', undefined, 1)).body.items.map((l: { id: string }) => l.id)).toEqual([mine.body.id]);
    expect((await api(agentKey, 'GET', `/v1/leads/${other.body.id}`)).status).toBe(404);
    expect((await api(agentKey, 'PATCH', `/v1/leads/${mine.body.id}`, { status: 'contacted' }, 1)).body.status).toBe('contacted');
    expect((await api(agentKey, 'PATCH', `/v1/leads/${mine.body.id}`, { status: 'closed_won' })).body).toMatchObject({ status: 422, code: 'invalid_transition' });
    expect((await api(agentKey, 'POST', `/v1/leads/${mine.body.id}/activities`, { type: 'call', summary: 'booked a showing' })).status).toBe(201);
    expect((await api(integrationKey, 'POST', `/v1/leads/${other.body.id}/activities`, { type: 'form_submission' })).status).toBe(201);
    const timeline = (await api(agentKey, 'GET', `/v1/leads/${mine.body.id}/activities`, undefined, 1)).body.items.map((a: { type: string }) => a.type);
    expect(timeline.filter((t: string) => t !== 'score_change')).toEqual(['call', 'status_change', 'assignment', 'inquiry']);
  }, 60_000);

  it('publishes its events on NATS, and records a leads.activity.record command once though delivered twice', async () => {
    const { id: accountId, admin } = await newAccount();
    const seen: { subject: string; leadId: string; accountId: string }[] = [];
    const observer = await bus.subscribe(['leads.lead.created', 'leads.activity.recorded'], { durable: `sys-observer-${run}` }, async (m) => {
      seen.push({ subject: m.subject, leadId: m.payload.leadId, accountId: m.payload.accountId });
    });
    try {
      const lead = (await api(admin, 'POST', '/v1/leads', { name: 'Bus', email: 'bus@example.com' })).body;
      await eventually(async () => expect(seen.filter((e) => e.leadId === lead.id)).toEqual(expect.arrayContaining([
        { subject: 'leads.lead.created', leadId: lead.id, accountId },
        { subject: 'leads.activity.recorded', leadId: lead.id, accountId },
      ])), 20_000);

      const eventId = randomUUID();
      const command = { eventId, accountId, leadId: lead.id, version: 1, occurredAt: new Date().toISOString(), source: 'portal-bridge', activity: { type: 'property_view' as const, summary: 'viewed twice' } };
      await bus.publish('leads.activity.record', command);
      await bus.publish('leads.activity.record', command, { msgId: `${eventId}-redelivery` });
      // A work queue forgets a message once it is acknowledged: empty means both deliveries were handled.
      const nc = await connect({ servers: urls.NATS_URL, name: 'sys-leads-probe' });
      try {
        const jsm = await jetstreamManager(nc);
        await eventually(async () => expect((await jsm.streams.info(`${namespace}_LEADS_COMMANDS`)).state.messages).toBe(0), 20_000);
      } finally {
        await nc.close();
      }
      const views = (await api(admin, 'GET', `/v1/leads/${lead.id}/activities?type=property_view`, undefined, 1)).body;
      expect(views.total).toBe(1);
      expect(views.items[0]).toMatchObject({ summary: 'viewed twice', actor: { type: 'service', id: 'portal-bridge' } });
    } finally {
      await observer.stop();
    }
  }, 60_000);
});
