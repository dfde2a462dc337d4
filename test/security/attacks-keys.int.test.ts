import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN, PLATFORM, expectProblem, startTarget, type Target } from './harness';

/** Every file under a folder, as bytes: where a secret kept in clear would show. */
function filesUnder(dir: string): Buffer[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [readFileSync(path)];
  });
}

describe('attacks on API keys', () => {
  let t: Target;
  beforeEach(async () => {
    t = await startTarget();
  });
  afterEach(() => t.close());

  const keyIds = async (admin: string) =>
    (await t.call(admin, 'GET', '/v1/api-keys')).json().items.map((k: { id: string }) => k.id);

  it('an old ADMIN_API_KEY or PLATFORM_API_KEY opens nothing once the variable was rotated and the product restarted', async () => {
    await t.product.close();
    const NEW_ADMIN = 'ek_attack_admin_rotated_0123456789abcdef';
    const NEW_PLATFORM = 'ek_attack_platform_rotated_0123456789ab';
    t = await startTarget({ adminApiKey: NEW_ADMIN, platformApiKey: NEW_PLATFORM }, t.dir);

    expectProblem(await t.call(ADMIN, 'GET', '/v1/listings'), 401, 'unauthorized');
    expectProblem(await t.call(ADMIN, 'POST', '/v1/api-keys', { name: 'backdoor', role: 'admin' }), 401);
    expectProblem(await t.call(PLATFORM, 'POST', '/v1/accounts', { name: 'Shadow' }), 401);
    expect((await t.call(NEW_ADMIN, 'GET', '/v1/listings')).statusCode).toBe(200);
    const keys = (await t.call(NEW_ADMIN, 'GET', '/v1/api-keys')).json().items;
    expect(keys.map((k: { name: string }) => k.name)).not.toContain('backdoor');
    expect(keys.filter((k: { role: string }) => k.role === 'admin')).toHaveLength(1);
  });

  it('an Idempotency-Key replay of a key or account creation never hands the secret out again, and no secret is kept in clear', async () => {
    const first = await t.call(
      ADMIN,
      'POST',
      '/v1/api-keys',
      { name: 'feed', role: 'integration' },
      {
        'idempotency-key': 'steal-1',
      },
    );
    expect(first.statusCode).toBe(201);
    expect(first.headers['cache-control']).toBe('no-store');
    const replay = await t.call(
      ADMIN,
      'POST',
      '/v1/api-keys',
      { name: 'feed', role: 'integration' },
      {
        'idempotency-key': 'steal-1',
      },
    );
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['cache-control']).toBe('no-store');
    expect(replay.json()).toEqual(expect.objectContaining({ id: first.json().id }));
    expect(replay.json()).not.toHaveProperty('secret');

    const account = await t.call(PLATFORM, 'POST', '/v1/accounts', { name: 'Acme' }, { 'idempotency-key': 'steal-2' });
    expect(account.statusCode).toBe(201);
    expect(account.headers['cache-control']).toBe('no-store');
    const accountReplay = await t.call(
      PLATFORM,
      'POST',
      '/v1/accounts',
      { name: 'Acme' },
      {
        'idempotency-key': 'steal-2',
      },
    );
    expect(accountReplay.statusCode).toBe(201);
    expect(accountReplay.headers['cache-control']).toBe('no-store');
    expect(accountReplay.json().account.id).toBe(account.json().account.id);
    expect(accountReplay.json().adminKey).not.toHaveProperty('secret');

    // The data folder holds no secret: neither the keys made now nor those taken from the environment.
    await t.product.close();
    const secrets = [first.json().secret, account.json().adminKey.secret, ADMIN, PLATFORM];
    const files = filesUnder(t.dir);
    expect(files.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(files.filter((f) => f.includes(secret))).toHaveLength(0);
    t = await startTarget({}, t.dir);
  });

  it("an agent key naming an unknown agent, another account's agent or an inactive agent is refused on agentId, and no key is made", async () => {
    const before = await keyIds(ADMIN);
    const rival = await t.newAccount();
    const theirs = await t.agent(rival.admin);
    const idle = await t.agent(ADMIN, { active: false });

    const unknown = await t.call(ADMIN, 'POST', '/v1/api-keys', { name: 'x', role: 'agent', agentId: 'agt_nobody' });
    const foreign = await t.call(ADMIN, 'POST', '/v1/api-keys', { name: 'x', role: 'agent', agentId: theirs.id });
    const inactive = await t.call(ADMIN, 'POST', '/v1/api-keys', { name: 'x', role: 'agent', agentId: idle.id });
    for (const res of [unknown, foreign, inactive]) expectProblem(res, 422, 'validation_failed');
    // Another account's agent reads exactly as one that does not exist: nothing tells it exists.
    expect(foreign.json().errors).toEqual(unknown.json().errors);
    expect(foreign.json().detail).toBe(unknown.json().detail);
    expect(unknown.json().errors).toEqual([{ path: 'agentId', message: 'is not an agent of this account' }]);
    expect(inactive.json().errors).toEqual([{ path: 'agentId', message: 'names an inactive agent' }]);

    expect(await keyIds(ADMIN)).toEqual(before);
    expect(await keyIds(rival.admin)).toHaveLength(1);
  });

  it("deactivating or deleting an agent revokes its keys at once, and only that agent's keys", async () => {
    const ana = await t.agent(ADMIN);
    const bo = await t.agent(ADMIN);
    const anaKey = await t.key(ADMIN, 'agent', ana.id);
    const boKey = await t.key(ADMIN, 'agent', bo.id);
    const feed = await t.key(ADMIN, 'integration');
    for (const k of [anaKey, boKey, feed]) expect((await t.call(k.secret, 'GET', '/v1/listings')).statusCode).toBe(200);

    expect((await t.call(ADMIN, 'PATCH', `/v1/agents/${ana.id}`, { active: false })).statusCode).toBe(200);
    expectProblem(await t.call(anaKey.secret, 'GET', '/v1/leads'), 401, 'unauthorized');
    expect(await keyIds(ADMIN)).not.toContain(anaKey.id);
    expect((await t.call(boKey.secret, 'GET', '/v1/leads')).statusCode).toBe(200);
    expect((await t.call(feed.secret, 'GET', '/v1/listings')).statusCode).toBe(200);

    // Reactivating the agent does not bring the revoked key back; a new key works.
    expect((await t.call(ADMIN, 'PATCH', `/v1/agents/${ana.id}`, { active: true })).statusCode).toBe(200);
    expectProblem(await t.call(anaKey.secret, 'GET', '/v1/leads'), 401);
    const again = await t.key(ADMIN, 'agent', ana.id);
    expect((await t.call(again.secret, 'GET', '/v1/leads')).statusCode).toBe(200);

    expect((await t.call(ADMIN, 'DELETE', `/v1/agents/${bo.id}`)).statusCode).toBe(200);
    expectProblem(await t.call(boKey.secret, 'GET', '/v1/leads'), 401);
    expect(await keyIds(ADMIN)).toEqual(expect.arrayContaining([again.id, feed.id]));
    expect(await keyIds(ADMIN)).not.toContain(boKey.id);
    expect((await t.call(again.secret, 'GET', '/v1/leads')).statusCode).toBe(200);
  });

  it("another account deactivating its agents cannot touch this account's agent keys", async () => {
    const ana = await t.agent(ADMIN);
    const anaKey = await t.key(ADMIN, 'agent', ana.id);
    const rival = await t.newAccount();
    // The rival's admin tries the victim's agent id on its own agent routes.
    expectProblem(await t.call(rival.admin, 'PATCH', `/v1/agents/${ana.id}`, { active: false }), 404);
    expectProblem(await t.call(rival.admin, 'DELETE', `/v1/agents/${ana.id}`), 404);
    expectProblem(await t.call(rival.admin, 'DELETE', `/v1/api-keys/${anaKey.id}`), 404);
    expect((await t.call(anaKey.secret, 'GET', '/v1/leads')).statusCode).toBe(200);
    expect((await t.call(ADMIN, 'GET', `/v1/agents/${ana.id}`)).json()).toMatchObject({ active: true, version: 1 });
  });

  it("the account's last admin key cannot be revoked (409 last_admin_key) and keeps working", async () => {
    const [only] = (await t.call(ADMIN, 'GET', '/v1/api-keys')).json().items;
    expectProblem(await t.call(ADMIN, 'DELETE', `/v1/api-keys/${only.id}`), 409, 'last_admin_key');
    expect((await t.call(ADMIN, 'GET', '/v1/listings')).statusCode).toBe(200);
    expect(await keyIds(ADMIN)).toEqual([only.id]);
  });

  it('API2 broken authentication: missing, malformed, wrong, revoked or misplaced keys are all 401 and change nothing', async () => {
    const revoked = await t.key(ADMIN, 'admin');
    expect((await t.call(ADMIN, 'DELETE', `/v1/api-keys/${revoked.id}`)).statusCode).toBe(200);
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: `Basic ${Buffer.from(`admin:${ADMIN}`).toString('base64')}` },
      { authorization: ADMIN },
      { authorization: `Bearer ${ADMIN}x` },
      { authorization: `Bearer ${ADMIN.slice(0, -1)}` },
      { authorization: `Bearer ${ADMIN.toUpperCase()}` },
      { authorization: `Bearer ${revoked.secret}` },
      { authorization: 'Bearer ek_' },
      { authorization: `Bearer ${'a'.repeat(5000)}` },
      { authorization: "Bearer ' OR 1=1 --" },
      { 'x-api-key': ADMIN },
    ];
    for (const headers of attempts) {
      const read = await t.call(null, 'GET', '/v1/listings', undefined, headers);
      expectProblem(read, 401, 'unauthorized');
      expectProblem(await t.call(null, 'POST', '/v1/listings', { externalId: 'X' }, headers), 401);
    }
    expectProblem(await t.call(null, 'GET', `/v1/listings?api_key=${ADMIN}`), 401);
    expect((await t.call(ADMIN, 'GET', '/v1/listings')).json().total).toBe(0);
    expect(await keyIds(ADMIN)).not.toContain(revoked.id);
  });

  it('API5 broken function level authorization: agent and integration keys are refused 403 on admin routes, nothing changes', async () => {
    const ana = await t.agent(ADMIN);
    const agentKey = await t.key(ADMIN, 'agent', ana.id);
    const feed = await t.key(ADMIN, 'integration');
    const rule = await t.call(ADMIN, 'POST', '/v1/routing/rules', {
      name: 'r',
      priority: 1,
      strategy: 'round_robin',
      agentIds: [ana.id],
    });
    expect(rule.statusCode).toBe(201);
    const state = async () => ({
      keys: await keyIds(ADMIN),
      agents: (await t.call(ADMIN, 'GET', '/v1/agents')).json(),
      rules: (await t.call(ADMIN, 'GET', '/v1/routing/rules')).json(),
      settings: (await t.call(ADMIN, 'GET', '/v1/routing/settings')).json(),
      scoring: (await t.call(ADMIN, 'GET', '/v1/scoring/config')).json(),
      webhooks: (await t.call(ADMIN, 'GET', '/v1/webhooks')).json(),
    });
    const before = await state();
    const adminOnly: [string, string, unknown?][] = [
      ['POST', '/v1/api-keys', { name: 'mine now', role: 'admin' }],
      ['GET', '/v1/api-keys'],
      ['DELETE', `/v1/api-keys/${feed.id}`],
      ['POST', '/v1/agents', { name: 'Mallory', email: 'm@example.com' }],
      ['PATCH', `/v1/agents/${ana.id}`, { capacity: 999 }],
      ['DELETE', `/v1/agents/${ana.id}`],
      ['GET', '/v1/agents'],
      ['POST', '/v1/routing/rules', { name: 'grab all', priority: 0, strategy: 'round_robin', agentIds: [ana.id] }],
      ['PATCH', `/v1/routing/rules/${rule.json().id}`, { enabled: false }],
      ['DELETE', `/v1/routing/rules/${rule.json().id}`],
      ['PUT', '/v1/routing/settings', { defaultAgentIds: [ana.id], defaultStrategy: 'least_loaded' }],
      ['PUT', '/v1/scoring/config', { defaultSourceQuality: 1 }],
      ['POST', '/v1/webhooks', { url: 'https://crm.example.com/hook', events: ['*'] }],
      ['POST', '/v1/accounts', { name: 'Shadow' }],
    ];
    for (const key of [agentKey.secret, feed.secret]) {
      for (const [method, url, body] of adminOnly) {
        const res = await t.call(key, method as 'GET', url, body);
        expect({ method, url, status: res.statusCode }).toEqual({ method, url, status: 403 });
        expectProblem(res, 403, 'forbidden');
      }
    }
    // Not even an admin may make accounts: that is the platform key's.
    expectProblem(await t.call(ADMIN, 'POST', '/v1/accounts', { name: 'Shadow' }), 403);
    expect(await state()).toEqual(before);
  });

  it('authorization comes before validation: an agent sending a broken scoring config gets 403, not 422', async () => {
    const ana = await t.agent(ADMIN);
    const agentKey = await t.key(ADMIN, 'agent', ana.id);
    const before = (await t.call(ADMIN, 'GET', '/v1/scoring/config')).json();
    for (const body of [{ weights: 'x', unknown: true }, { sourceQuality: { zillow: 1e9 } }, {}])
      expectProblem(await t.call(agentKey.secret, 'PUT', '/v1/scoring/config', body), 403, 'forbidden');
    expect((await t.call(ADMIN, 'GET', '/v1/scoring/config')).json()).toEqual(before);
  });
});
