import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Identity } from '@estate/contracts/accounts';
import { requireSignedIdentity } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { createHttpApp } from '@estate/platform/http';
import { TEST_SIGNING_SECRET, TEST_TRUST } from '@estate/testing';
import type { FastifyInstance } from 'fastify';
import { LeadsClient, type AgentsReader } from '../src/clients/leads.client';
import { ADMIN_KEY, log, startGateway, type GatewayHarness } from './harness';

/** The leads service's agents as the gateway asks for them, by account. */
class Agents implements AgentsReader {
  readonly byAccount = new Map<string, Map<string, { active: boolean; version: number }>>();
  set(accountId: string, agentId: string, active: boolean, version: number): void {
    if (!this.byAccount.has(accountId)) this.byAccount.set(accountId, new Map());
    this.byAccount.get(accountId)!.set(agentId, { active, version });
  }
  async state(who: Identity, agentId: string) {
    return this.byAccount.get(who.accountId)?.get(agentId) ?? null;
  }
}

const event = (accountId: string, agentId: string, version: number) => ({
  eventId: randomUUID(),
  accountId,
  agentId,
  version,
  occurredAt: new Date().toISOString(),
});

describe('agent keys follow their agent (gateway)', () => {
  let a: GatewayHarness;
  let b: GatewayHarness;
  const agents = new Agents();
  beforeEach(async () => {
    a = await startGateway({ keyCacheMs: 60_000, agents });
    b = await startGateway({ keyCacheMs: 60_000, agents, shared: { store: a.store, bus: a.bus } });
  });
  afterEach(async () => {
    await b.close();
    await a.close();
  });

  const makeKey = async (agentId: string) => {
    const res = await a.call(ADMIN_KEY, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'agent', role: 'agent', agentId },
    });
    expect(res.statusCode).toBe(201);
    return res.json() as { id: string; secret: string };
  };
  const echo = (gw: GatewayHarness, secret: string) =>
    gw.call(secret, { method: 'GET', url: '/v1/echo' }).then((r) => r.statusCode);

  it('a deactivation event revokes the agent keys on every replica at once, even with their caches warm', async () => {
    agents.set(a.account.id, 'agt_ana', true, 3);
    agents.set(a.account.id, 'agt_bo', true, 1);
    const ana = await makeKey('agt_ana');
    const bo = await makeKey('agt_bo');
    for (const gw of [a, b]) for (const k of [ana, bo]) expect(await echo(gw, k.secret)).toBe(200);

    agents.set(a.account.id, 'agt_ana', false, 4);
    await a.bus.publish('leads.agent.updated', {
      ...event(a.account.id, 'agt_ana', 4),
      active: false,
      changes: ['active'],
    });
    for (const gw of [a, b]) {
      expect(await echo(gw, ana.secret)).toBe(401);
      expect(await echo(gw, bo.secret)).toBe(200);
    }
    // Another account's event naming the same agent id touches nothing of this account.
    await a.bus.publish('leads.agent.deleted', event('acc_someone_else', 'agt_bo', 9));
    for (const gw of [a, b]) expect(await echo(gw, bo.secret)).toBe(200);

    await a.bus.publish('leads.agent.deleted', event(a.account.id, 'agt_bo', 2));
    for (const gw of [a, b]) expect(await echo(gw, bo.secret)).toBe(401);
  });

  it('a repeated or late deactivation leaves a key made after the agent was active again', async () => {
    agents.set(a.account.id, 'agt_cy', true, 1);
    const old = await makeKey('agt_cy');
    const deactivated = { ...event(a.account.id, 'agt_cy', 2), active: false, changes: ['active'] };
    await a.bus.publish('leads.agent.updated', deactivated);
    expect(await echo(a, old.secret)).toBe(401);

    agents.set(a.account.id, 'agt_cy', true, 3);
    const fresh = await makeKey('agt_cy');
    await a.bus.publish('leads.agent.updated', { ...deactivated, eventId: randomUUID() });
    // An update that leaves the agent active revokes nothing either.
    await a.bus.publish('leads.agent.updated', {
      ...event(a.account.id, 'agt_cy', 4),
      active: true,
      changes: ['capacity'],
    });
    expect(await echo(a, fresh.secret)).toBe(200);
    expect(await echo(b, fresh.secret)).toBe(200);
  });

  it('refuses a key for an agent deactivated while it was being made, and keeps none', async () => {
    let reads = 0;
    const racing: AgentsReader = {
      state: async () => (++reads === 1 ? { active: true, version: 1 } : { active: false, version: 2 }),
    };
    const gw = await startGateway({ agents: racing });
    try {
      const res = await gw.call(ADMIN_KEY, {
        method: 'POST',
        url: '/v1/api-keys',
        payload: { name: 'agent', role: 'agent', agentId: 'agt_dee' },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([{ path: 'agentId', message: 'names an inactive agent' }]);
      const keys = (await gw.call(ADMIN_KEY, { method: 'GET', url: '/v1/api-keys' })).json().items;
      expect(keys.map((k: { role: string }) => k.role)).toEqual(['admin']);
    } finally {
      await gw.close();
    }
  });
});

describe('LeadsClient: the agent asked of the leads service with the signed identity', () => {
  let leads: FastifyInstance;
  let client: LeadsClient;
  let leadsUrl: string;
  beforeAll(async () => {
    leads = await createHttpApp({ service: 'leads', logger: log });
    requireSignedIdentity(leads, TEST_TRUST);
    const stored: Record<string, { accountId: string; active: boolean }> = {
      agt_1: { accountId: 'acc_a', active: true },
      agt_2: { accountId: 'acc_a', active: false },
      agt_3: { accountId: 'acc_b', active: true },
    };
    leads.get('/v1/agents/:id', async (request) => {
      const { id } = request.params as { id: string };
      const agent = stored[id];
      if (id === 'agt_broken') throw new AppError('dependency_unavailable', 'store away');
      if (!agent || agent.accountId !== request.identity?.accountId)
        throw new AppError('agent_not_found', `Agent ${id} does not exist`);
      return {
        id,
        name: 'A',
        email: 'a@example.com',
        phone: null,
        active: agent.active,
        capacity: 10,
        areas: [],
        openLeads: 0,
        version: 5,
        createdAt: '2026-11-24T00:00:00.000Z',
        updatedAt: '2026-11-24T00:00:00.000Z',
      };
    });
    await leads.listen({ port: 0, host: '127.0.0.1' });
    leadsUrl = `http://127.0.0.1:${(leads.server.address() as AddressInfo).port}`;
    client = new LeadsClient({ leadsUrl, signingSecret: TEST_SIGNING_SECRET });
  });
  afterAll(() => leads.close());

  const who = (accountId: string): Identity => ({ accountId, keyId: 'key_x', role: 'admin', agentId: null });

  it("reads an agent of the caller's account; another account's and an unknown one are both missing", async () => {
    expect(await client.state(who('acc_a'), 'agt_1')).toEqual({ active: true, version: 5 });
    expect(await client.state(who('acc_a'), 'agt_2')).toEqual({ active: false, version: 5 });
    expect(await client.state(who('acc_a'), 'agt_3')).toBeNull();
    expect(await client.state(who('acc_a'), 'agt_nobody')).toBeNull();
    expect(await client.state(who('acc_a'), '../../v1/agents?x=1')).toBeNull();
  });

  it('is refused without the right signing secret, and says so as bad_gateway rather than "missing"', async () => {
    const forged = new LeadsClient({ leadsUrl, signingSecret: 'wrong-secret-0123456789abcdef-0123456789' });
    await expect(forged.state(who('acc_a'), 'agt_1')).rejects.toMatchObject({ code: 'bad_gateway' });
    await expect(client.state(who('acc_a'), 'agt_broken')).rejects.toMatchObject({ code: 'bad_gateway' });
  });
});
