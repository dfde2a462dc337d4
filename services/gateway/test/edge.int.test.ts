import { ADMIN_KEY, PLATFORM_KEY, startGateway, type GatewayHarness } from './harness';

describe('gateway edge, on its own in front of a stand-in route', () => {
  let gw: GatewayHarness;

  beforeEach(async () => {
    gw = await startGateway();
  });
  afterEach(async () => {
    await gw.close();
  });

  const newKey = async (body: Record<string, unknown>) => {
    const res = await gw.call(ADMIN_KEY, { method: 'POST', url: '/v1/api-keys', payload: body });
    expect(res.statusCode).toBe(201);
    return res.json() as { id: string; secret: string; role: string; agentId: string | null };
  };

  describe('API keys', () => {
    it('refuses /v1 without a key or with a wrong one (401 problem+json) and lets health through without one', async () => {
      for (const key of [null, 'ek_wrong']) {
        for (const method of ['GET', 'POST'] as const) {
          const res = await gw.call(key, { method, url: '/v1/echo', payload: method === 'POST' ? {} : undefined });
          expect(res.statusCode).toBe(401);
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(res.json()).toMatchObject({
            status: 401,
            code: 'unauthorized',
            requestId: res.headers['x-request-id'],
          });
        }
      }
      const malformed = await gw.app.inject({
        method: 'GET',
        url: '/v1/echo',
        headers: { authorization: `Basic ${ADMIN_KEY}` },
      });
      expect(malformed.statusCode).toBe(401);
      expect(gw.standIn.posts).toBe(0);
      expect((await gw.call(null, { method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    });

    it('hands the route the identity of the key: account, key id, role and agent', async () => {
      const admin = (await gw.call(ADMIN_KEY, { method: 'GET', url: '/v1/echo' })).json().identity;
      expect(admin).toMatchObject({
        accountId: gw.account.id,
        keyId: expect.stringMatching(/^key_/),
        role: 'admin',
        agentId: null,
      });
      const integration = await newKey({ name: 'feed', role: 'integration' });
      expect((await gw.call(integration.secret, { method: 'GET', url: '/v1/echo' })).json().identity).toEqual({
        accountId: gw.account.id,
        keyId: integration.id,
        role: 'integration',
        agentId: null,
      });
      const agent = await newKey({ name: 'agent key', role: 'agent', agentId: 'agt_1' });
      expect((await gw.call(agent.secret, { method: 'GET', url: '/v1/echo' })).json().identity).toEqual({
        accountId: gw.account.id,
        keyId: agent.id,
        role: 'agent',
        agentId: 'agt_1',
      });
      expect((await gw.call(PLATFORM_KEY, { method: 'GET', url: '/v1/echo' })).json().identity).toMatchObject({
        accountId: '',
        role: 'platform',
      });
    });

    it('shows a new secret once, lists keys without secrets, and refuses a revoked key at once', async () => {
      const key = await newKey({ name: 'feed', role: 'integration' });
      expect(key).toMatchObject({
        id: expect.stringMatching(/^key_/),
        role: 'integration',
        agentId: null,
        secret: expect.stringMatching(/^ek_/),
      });
      expect((await gw.call(key.secret, { method: 'GET', url: '/v1/echo' })).statusCode).toBe(200);
      const list = await gw.call(ADMIN_KEY, { method: 'GET', url: '/v1/api-keys' });
      expect(list.json().items.map((k: { id: string }) => k.id)).toContain(key.id);
      expect(list.body).not.toContain(key.secret);
      expect(list.body).not.toContain('hash');
      expect((await gw.call(key.secret, { method: 'GET', url: '/v1/api-keys' })).statusCode).toBe(403);
      expect((await gw.call(ADMIN_KEY, { method: 'DELETE', url: `/v1/api-keys/${key.id}` })).json()).toEqual({
        id: key.id,
        revoked: true,
      });
      const refused = await gw.call(key.secret, { method: 'GET', url: '/v1/echo' });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().code).toBe('unauthorized');
      expect(
        (await gw.call(ADMIN_KEY, { method: 'GET', url: '/v1/api-keys' }))
          .json()
          .items.map((k: { id: string }) => k.id),
      ).not.toContain(key.id);
      expect((await gw.call(ADMIN_KEY, { method: 'DELETE', url: `/v1/api-keys/${key.id}` })).statusCode).toBe(404);
    });

    it('lets only the platform key create accounts, each with a working admin key of its own', async () => {
      expect(
        (await gw.call(ADMIN_KEY, { method: 'POST', url: '/v1/accounts', payload: { name: 'Other brokerage' } }))
          .statusCode,
      ).toBe(403);
      const res = await gw.call(PLATFORM_KEY, {
        method: 'POST',
        url: '/v1/accounts',
        payload: { name: 'Other brokerage' },
      });
      expect(res.statusCode).toBe(201);
      const { account, adminKey } = res.json();
      expect(account).toMatchObject({ id: expect.stringMatching(/^acc_/), name: 'Other brokerage' });
      expect(account.id).not.toBe(gw.account.id);
      expect(adminKey).toMatchObject({ role: 'admin', secret: expect.stringMatching(/^ek_/) });
      expect((await gw.call(adminKey.secret, { method: 'GET', url: '/v1/echo' })).json().identity).toMatchObject({
        accountId: account.id,
        role: 'admin',
      });
      const theirs = (await gw.call(adminKey.secret, { method: 'GET', url: '/v1/api-keys' })).json().items;
      expect(theirs.map((k: { id: string }) => k.id)).toEqual([adminKey.id]);
      expect(JSON.stringify(theirs)).not.toContain(adminKey.secret);
    });
  });

  describe('Idempotency-Key', () => {
    const post = (key: string | null, payload: unknown, idempotencyKey?: string) =>
      gw.call(key, {
        method: 'POST',
        url: '/v1/echo',
        payload: payload as Record<string, unknown>,
        headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
      });

    it('replays the first answer to a retry, and refuses the key with another body (422 idempotency_key_reused)', async () => {
      const first = await post(ADMIN_KEY, { a: 1 }, 'create-1');
      const second = await post(ADMIN_KEY, { a: 1 }, 'create-1');
      expect(first.statusCode).toBe(201);
      expect(second.statusCode).toBe(201);
      expect(second.json()).toEqual(first.json());
      expect(second.headers.location).toBe(first.headers.location);
      expect(second.headers['content-type']).toBe(first.headers['content-type']);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(gw.standIn.posts).toBe(1);
      const other = await post(ADMIN_KEY, { a: 2 }, 'create-1');
      expect(other.statusCode).toBe(422);
      expect(other.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(other.json().code).toBe('idempotency_key_reused');
      expect(gw.standIn.posts).toBe(1);
    });

    it('keys records by API key, and leaves POSTs without a key alone', async () => {
      const other = await newKey({ name: 'second', role: 'admin' });
      expect((await post(ADMIN_KEY, { a: 1 }, 'same')).json().n).toBe(1);
      expect((await post(other.secret, { a: 1 }, 'same')).json().n).toBe(2);
      expect((await post(ADMIN_KEY, { a: 1 })).json().n).toBe(3);
      expect((await post(ADMIN_KEY, { a: 1 })).json().n).toBe(4);
    });

    it('does not keep a failed attempt, so the client can fix it and retry under the same key', async () => {
      const failed = await post(ADMIN_KEY, { fail: true }, 'k2');
      expect(failed.statusCode).toBe(422);
      const fixed = await post(ADMIN_KEY, { a: 1 }, 'k2');
      expect(fixed.statusCode).toBe(201);
      expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    });

    it('answers 409 with Retry-After to a retry while the first request still runs, then replays its answer', async () => {
      const { entered, release } = gw.standIn.hold();
      const first = post(ADMIN_KEY, { a: 1 }, 'race');
      await entered;
      const during = await post(ADMIN_KEY, { a: 1 }, 'race');
      expect(during.statusCode).toBe(409);
      expect(during.json().code).toBe('idempotency_in_progress');
      expect(during.headers['retry-after']).toBe('1');
      release();
      expect((await first).statusCode).toBe(201);
      const after = await post(ADMIN_KEY, { a: 1 }, 'race');
      expect(after.statusCode).toBe(201);
      expect(after.json()).toEqual((await first).json());
      expect(gw.standIn.posts).toBe(1);
    });

    it('refuses a key longer than 255 characters (422 validation_failed)', async () => {
      const res = await post(ADMIN_KEY, { a: 1 }, 'k'.repeat(256));
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
      });
      expect(gw.standIn.posts).toBe(0);
    });
  });
});

describe('gateway edge rate limits', () => {
  it('puts RateLimit headers on answers and answers 429 with Retry-After past the limit, per key', async () => {
    const gw = await startGateway({ rateLimitPerMinute: 3 });
    try {
      const get = (key: string) => gw.call(key, { method: 'GET', url: '/v1/echo' });
      const first = await get(ADMIN_KEY);
      expect(first.statusCode).toBe(200);
      expect(first.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '2' });
      expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
      await get(ADMIN_KEY);
      await get(ADMIN_KEY);
      const limited = await get(ADMIN_KEY);
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(limited.json().code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      const another = await get(PLATFORM_KEY);
      expect(another.statusCode).toBe(200);
      expect(another.headers['ratelimit-remaining']).toBe('2');
      expect((await gw.call(null, { method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    } finally {
      await gw.close();
    }
  });
});

describe('gateway replicas caching API keys, side by side on one store and one bus', () => {
  let a: GatewayHarness;
  let b: GatewayHarness;

  beforeEach(async () => {
    // A cache far longer than the test: only the revocation notification can make a replica forget a key.
    a = await startGateway({ keyCacheMs: 60_000 });
    b = await startGateway({ keyCacheMs: 60_000, shared: { store: a.store, bus: a.bus } });
  });
  afterEach(async () => {
    await b.close();
    await a.close();
  });

  it('refuses a key revoked through one replica at once on every replica, though both had it cached', async () => {
    const created = await a.call(ADMIN_KEY, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'feed', role: 'integration' },
    });
    const key = created.json() as { id: string; secret: string };
    for (const gw of [a, b])
      expect((await gw.call(key.secret, { method: 'GET', url: '/v1/echo' })).statusCode).toBe(200);

    expect((await a.call(ADMIN_KEY, { method: 'DELETE', url: `/v1/api-keys/${key.id}` })).statusCode).toBe(200);
    for (const gw of [a, b]) {
      const refused = await gw.call(key.secret, { method: 'GET', url: '/v1/echo' });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().code).toBe('unauthorized');
    }
    // Other keys stay cached and keep working.
    for (const gw of [a, b])
      expect((await gw.call(ADMIN_KEY, { method: 'GET', url: '/v1/echo' })).statusCode).toBe(200);
  });

  it('answers a cached key without reading the store again', async () => {
    expect((await b.call(ADMIN_KEY, { method: 'GET', url: '/v1/echo' })).statusCode).toBe(200);
    const keys = await a.store.collection<{ id: string; hash: string }>('api_keys');
    const admin = (await keys.find({ name: 'ADMIN_API_KEY' }))[0];
    // The key disappears from under the cache (as if the store were briefly unreachable): the replica still knows it.
    await keys.deleteOne({ id: admin.id });
    expect((await b.call(ADMIN_KEY, { method: 'GET', url: '/v1/echo' })).statusCode).toBe(200);
  });
});
