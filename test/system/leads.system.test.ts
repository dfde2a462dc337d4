import { randomBytes, randomUUID } from 'node:crypto';
import { natsConnectOptions, NatsBus } from '@estate/bus/nats.bus';
import { describeWithEngines, eventually, listingBody } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pino from 'pino';
import { apiClient, startCluster, type Cluster } from './harness';

/**
 * Tier 3: leads in the distributed profile. Two leads replicas share one database; two gateways
 * each forward to one of them, so requests spread over both replicas as a load balancer would
 * spread them. Everything is driven through the gateways over HTTP, and over NATS where other
 * services would publish.
 */
describeWithEngines(
  'leads through the gateway (separate processes, two leads replicas, MongoDB, NATS)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let run = '';
    let namespace = '';
    let platform = '';
    let bus: NatsBus;

    /** Through gateway `via` (mod 2), that is through leads replica `via`. */
    const api = (key: string, via = 0) => apiClient(cluster.gateways[via % 2], key);
    /** A fresh account per test: its agents, rules and turns are its own. */
    const account = async (): Promise<string> => (await newAccount()).admin;
    const newAccount = async (): Promise<{ id: string; admin: string }> => {
      const res = await api(platform)('POST', '/v1/accounts', {
        name: `Leads ${run} ${randomBytes(3).toString('hex')}`,
      });
      expect(res.status).toBe(201);
      return { id: res.body.account.id, admin: res.body.adminKey.secret };
    };

    beforeAll(async () => {
      cluster = await startCluster({
        name: 'sysleads',
        engines: urls,
        replicas: { leads: 2 },
        gateways: 2,
        keys: { admin: false },
        logLevel: 'warn',
      });
      ({ run, namespace } = cluster);
      platform = cluster.keys.platform;
      bus = await NatsBus.connect(urls.NATS_URL, { log: pino({ level: 'silent' }), name: 'sys-leads-test', namespace });
    }, 120_000);

    afterAll(async () => {
      await bus?.close();
      await cluster?.stop();
    }, 60_000);

    it('captures without duplicates across replicas and shows interests from the listing projection', async () => {
      const admin = await account();
      const listing = await api(admin)('POST', '/v1/listings', listingBody({ pricing: { listPrice: 615000 } }));
      expect(listing.status).toBe(201);
      const first = await api(admin, 0)('POST', '/v1/leads', {
        name: 'Dana Cruz',
        email: 'Dana@Example.com',
        source: 'Zillow',
        propertyInterests: [{ listingId: listing.body.id }],
      });
      expect(first.status).toBe(201);
      expect(first.headers.get('etag')).toBe('"1"');
      // Captured right after the listing was created: leads asks listings rather than wait for the event.
      expect(first.body.propertyInterests[0].listing).toMatchObject({
        id: listing.body.id,
        price: { listPrice: 615000 },
      });
      const again = await api(admin, 1)('POST', '/v1/leads', {
        name: 'Dana',
        phone: '+1 512 555 0150',
        email: ' dana@example.com',
      });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, duplicate: true, phone: '+15125550150' });
      const byPhone = await api(admin, 0)('POST', '/v1/leads', { name: 'D', phone: '(512) 555-0150' });
      expect(byPhone.body).toMatchObject({ id: first.body.id, duplicate: true });
      await eventually(
        async () => {
          const read = await api(admin, 1)('GET', `/v1/leads/${first.body.id}`);
          expect(read.body.propertyInterests[0].listing).toMatchObject({
            id: listing.body.id,
            price: { listPrice: 615000 },
            address: { city: 'Austin' },
          });
        },
        { timeoutMs: 20_000 },
      );
      const timeline = await api(admin, 1)('GET', `/v1/leads/${first.body.id}/activities?type=inquiry`);
      expect(timeline.body.total).toBe(3);
      expect((await api(admin)('GET', '/v1/leads?q=dana')).body.total).toBe(1);
    }, 60_000);

    it('routes 30 leads at once over 3 agents through both replicas: exactly 10 each, capacity counted', async () => {
      const admin = await account();
      const agents: string[] = [];
      for (let i = 0; i < 3; i++)
        agents.push(
          (await api(admin)('POST', '/v1/agents', { name: `Agent ${i}`, email: `agent${i}@example.com` })).body.id,
        );
      const leads = await Promise.all(
        Array.from(
          { length: 30 },
          async (_, i) =>
            (await api(admin, i)('POST', '/v1/leads', { name: `Buyer ${i}`, email: `buyer${i}@example.com` })).body
              .id as string,
        ),
      );
      const routed = await Promise.all(leads.map((id, i) => api(admin, i)('POST', `/v1/leads/${id}/route`)));
      expect(routed.map((r) => r.status)).toEqual(Array(30).fill(200));
      const counts = Object.fromEntries(agents.map((a) => [a, routed.filter((r) => r.body.agentId === a).length]));
      expect(counts).toEqual(Object.fromEntries(agents.map((a) => [a, 10])));
      for (const a of agents) expect((await api(admin)('GET', `/v1/agents/${a}`)).body.openLeads).toBe(10);
      expect(routed[0].body.assignment).toMatchObject({
        ruleId: null,
        strategy: 'round_robin',
        reason: expect.stringContaining('team default'),
      });
    }, 120_000);

    it('holds capacity under concurrent routing and answers 409 no_agent_available when nobody is left', async () => {
      const admin = await account();
      for (let i = 0; i < 2; i++)
        await api(admin)('POST', '/v1/agents', { name: `Small ${i}`, email: `small${i}@example.com`, capacity: 2 });
      const leads = await Promise.all(
        Array.from(
          { length: 7 },
          async (_, i) =>
            (await api(admin, i)('POST', '/v1/leads', { name: `P ${i}`, email: `p${i}@example.com` })).body
              .id as string,
        ),
      );
      const routed = await Promise.all(leads.map((id, i) => api(admin, i)('POST', `/v1/leads/${id}/route`)));
      expect(routed.filter((r) => r.status === 200)).toHaveLength(4);
      expect(routed.filter((r) => r.status === 409).map((r) => r.body.code)).toEqual([
        'no_agent_available',
        'no_agent_available',
        'no_agent_available',
      ]);
      const agents = (await api(admin)('GET', '/v1/agents')).body.items;
      expect(agents.map((a: { openLeads: number }) => a.openLeads)).toEqual([2, 2]);
    }, 60_000);

    it("makes agent keys only for the account's active agents, and revokes them on every gateway when the agent is deactivated or deleted", async () => {
      const admin = await account();
      const rival = await account();
      const theirs = (await api(rival)('POST', '/v1/agents', { name: 'Theirs', email: 't@example.com' })).body.id;
      for (const agentId of [theirs, 'agt_nobody']) {
        const refused = await api(admin)('POST', '/v1/api-keys', { name: 'x', role: 'agent', agentId });
        expect(refused.status).toBe(422);
        expect(refused.body.errors).toEqual([{ path: 'agentId', message: 'is not an agent of this account' }]);
      }
      const ana = (await api(admin)('POST', '/v1/agents', { name: 'Ana', email: 'ana@example.com' })).body.id;
      const bo = (await api(admin)('POST', '/v1/agents', { name: 'Bo', email: 'bo@example.com' })).body.id;
      const anaKey = (await api(admin)('POST', '/v1/api-keys', { name: 'ana', role: 'agent', agentId: ana })).body;
      const boKey = (await api(admin, 1)('POST', '/v1/api-keys', { name: 'bo', role: 'agent', agentId: bo })).body;
      for (const via of [0, 1])
        for (const k of [anaKey, boKey]) expect((await api(k.secret, via)('GET', '/v1/leads')).status).toBe(200);

      expect((await api(admin)('PATCH', `/v1/agents/${ana}`, { active: false })).status).toBe(200);
      expect((await api(admin, 1)('DELETE', `/v1/agents/${bo}`)).status).toBe(200);
      // Refused at once by every gateway, and revoked in the key store once the agent's event has reached it.
      await eventually(async () => {
        for (const via of [0, 1])
          for (const k of [anaKey, boKey]) expect((await api(k.secret, via)('GET', '/v1/leads')).status).toBe(401);
        const keys = (await api(admin)('GET', '/v1/api-keys')).body.items.map((k: { id: string }) => k.id);
        expect(keys).not.toContain(anaKey.id);
        expect(keys).not.toContain(boKey.id);
      });
      const inactive = await api(admin)('POST', '/v1/api-keys', { name: 'x', role: 'agent', agentId: ana });
      expect(inactive.body.errors).toEqual([{ path: 'agentId', message: 'names an inactive agent' }]);
    }, 60_000);

    it('keeps agents to their own leads and integrations out of the pipeline', async () => {
      const admin = await account();
      const agent = (await api(admin)('POST', '/v1/agents', { name: 'Solo', email: 'solo@example.com' })).body.id;
      const agentKey = (await api(admin)('POST', '/v1/api-keys', { name: 'solo', role: 'agent', agentId: agent })).body
        .secret;
      const integrationKey = (await api(admin)('POST', '/v1/api-keys', { name: 'site', role: 'integration' })).body
        .secret;
      const mine = await api(integrationKey)('POST', '/v1/leads', {
        name: 'Mine',
        email: 'mine@example.com',
        autoRoute: true,
      });
      // The integration learns only that the lead is in; the admin sees where routing put it.
      expect(mine.body).toEqual({ id: expect.any(String), duplicate: false });
      expect((await api(admin)('GET', `/v1/leads/${mine.body.id}`)).body).toMatchObject({ agentId: agent });
      const other = await api(admin)('POST', '/v1/leads', { name: 'Other', email: 'other@example.com' });
      expect((await api(integrationKey)('GET', '/v1/leads')).status).toBe(403);
      expect((await api(agentKey, 1)('GET', '/v1/leads')).body.items.map((l: { id: string }) => l.id)).toEqual([
        mine.body.id,
      ]);
      expect((await api(agentKey)('GET', `/v1/leads/${other.body.id}`)).status).toBe(404);
      expect((await api(agentKey, 1)('PATCH', `/v1/leads/${mine.body.id}`, { status: 'contacted' })).body.status).toBe(
        'contacted',
      );
      expect((await api(agentKey)('PATCH', `/v1/leads/${mine.body.id}`, { status: 'closed_won' })).body).toMatchObject({
        status: 422,
        code: 'invalid_transition',
      });
      expect(
        (
          await api(agentKey)('POST', `/v1/leads/${mine.body.id}/activities`, {
            type: 'call',
            summary: 'booked a showing',
          })
        ).status,
      ).toBe(201);
      expect(
        (await api(integrationKey)('POST', `/v1/leads/${other.body.id}/activities`, { type: 'form_submission' }))
          .status,
      ).toBe(201);
      const timeline = (await api(agentKey, 1)('GET', `/v1/leads/${mine.body.id}/activities`)).body.items.map(
        (a: { type: string }) => a.type,
      );
      expect(timeline.filter((t: string) => t !== 'score_change')).toEqual([
        'call',
        'status_change',
        'assignment',
        'inquiry',
      ]);
    }, 60_000);

    it('publishes its events on NATS, and records a leads.activity.record command once though delivered twice', async () => {
      const { id: accountId, admin } = await newAccount();
      const seen: { subject: string; leadId: string; accountId: string }[] = [];
      const observer = await bus.subscribe(
        ['leads.lead.created', 'leads.activity.recorded'],
        { durable: `sys-observer-${run}` },
        async (m) => {
          seen.push({ subject: m.subject, leadId: m.payload.leadId, accountId: m.payload.accountId });
        },
      );
      try {
        const lead = (await api(admin)('POST', '/v1/leads', { name: 'Bus', email: 'bus@example.com' })).body;
        await eventually(
          async () =>
            expect(seen.filter((e) => e.leadId === lead.id)).toEqual(
              expect.arrayContaining([
                { subject: 'leads.lead.created', leadId: lead.id, accountId },
                { subject: 'leads.activity.recorded', leadId: lead.id, accountId },
              ]),
            ),
          { timeoutMs: 20_000 },
        );

        const eventId = randomUUID();
        const command = {
          eventId,
          accountId,
          leadId: lead.id,
          version: 1,
          occurredAt: new Date().toISOString(),
          source: 'portal-bridge',
          activity: { type: 'property_view' as const, summary: 'viewed twice' },
        };
        await bus.publish('leads.activity.record', command);
        await bus.publish('leads.activity.record', command, { msgId: `${eventId}-redelivery` });
        // A work queue forgets a message once it is acknowledged: empty means both deliveries were handled.
        const nc = await connect({ ...natsConnectOptions(urls.NATS_URL), name: 'sys-leads-probe' });
        try {
          const jsm = await jetstreamManager(nc);
          await eventually(
            async () => expect((await jsm.streams.info(`${namespace}_LEADS_COMMANDS`)).state.messages).toBe(0),
            { timeoutMs: 20_000 },
          );
        } finally {
          await nc.close();
        }
        const views = (await api(admin, 1)('GET', `/v1/leads/${lead.id}/activities?type=property_view`)).body;
        expect(views.total).toBe(1);
        expect(views.items[0]).toMatchObject({
          summary: 'viewed twice',
          actor: { type: 'service', id: 'portal-bridge' },
        });
      } finally {
        await observer.stop();
      }
    }, 60_000);
  },
);
