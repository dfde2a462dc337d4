import { startEmbedded } from './harness';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listingBody } from '@estate/testing';
import type { InjectOptions } from 'fastify';
import pino from 'pino';
import { composeEmbedded, type EmbeddedProduct } from '../src/compose';
import type { EmbeddedConfig } from '../src/config';

const ADMIN = 'ek_test_admin_key_0123456789abcdefghijkl';
const PLATFORM = 'ek_test_platform_key_0123456789abcdefghij';
const log = pino({ level: 'silent' });

describe('embedded profile through the gateway edge', () => {
  let dir: string;
  let product: EmbeddedProduct;
  const config = (over: Partial<EmbeddedConfig> = {}): EmbeddedConfig => ({
    port: 0,
    host: '127.0.0.1',
    dataDir: dir,
    adminApiKey: ADMIN,
    platformApiKey: PLATFORM,
    rateLimitPerMinute: 1000,
    logLevel: 'silent',
    ...over,
  });
  const call = (key: string | null, opts: InjectOptions) =>
    product.app.inject({
      ...opts,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(opts.headers ?? {}) },
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embedded-'));
    product = await composeEmbedded(config(), log);
  });
  afterEach(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses /v1 without a key or with a wrong one (401 problem+json), and tags every answer with a request id', async () => {
    for (const key of [null, 'ek_wrong']) {
      const res = await call(key, { method: 'GET', url: '/v1/listings' });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 401, code: 'unauthorized', requestId: res.headers['x-request-id'] });
    }
    const kept = await call(ADMIN, {
      method: 'GET',
      url: '/v1/listings',
      headers: { 'x-request-id': 'client-abc.123' },
    });
    expect(kept.headers['x-request-id']).toBe('client-abc.123');
    const replaced = await call(ADMIN, {
      method: 'GET',
      url: '/v1/listings',
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves health, metrics, OpenAPI 3.1 and the docs without a key', async () => {
    expect((await call(null, { method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    const ready = await call(null, { method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks).toMatchObject({ bus: 'ok', 'store:listings': 'ok' });
    await call(ADMIN, { method: 'GET', url: '/v1/listings' });
    const metrics = await call(null, { method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('http_request_duration_seconds_bucket');
    expect(metrics.body).toContain('route="/v1/listings"');
    const doc = (await call(null, { method: 'GET', url: '/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/listings', '/v1/listings/{id}', '/v1/api-keys', '/v1/accounts']),
    );
    expect(doc.paths['/v1/listings'].post.requestBody.content['application/json'].schema).toBeDefined();
    expect((await call(null, { method: 'GET', url: '/docs' })).statusCode).toBeLessThan(400);
  });

  it('creates keys with the secret shown once, lists them without secrets, and a revoked key is refused at once', async () => {
    const created = await call(ADMIN, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'feed', role: 'integration' },
    });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key).toMatchObject({
      id: expect.stringMatching(/^key_/),
      role: 'integration',
      agentId: null,
      name: 'feed',
      secret: expect.stringMatching(/^ek_/),
    });
    expect((await call(key.secret, { method: 'POST', url: '/v1/listings', payload: listingBody() })).statusCode).toBe(
      201,
    );
    const list = (await call(ADMIN, { method: 'GET', url: '/v1/api-keys' })).json();
    expect(list.items.map((k: { id: string }) => k.id)).toContain(key.id);
    expect(JSON.stringify(list)).not.toContain(key.secret);
    expect(JSON.stringify(list)).not.toContain('hash');
    expect((await call(key.secret, { method: 'GET', url: '/v1/api-keys' })).statusCode).toBe(403);
    expect((await call(ADMIN, { method: 'DELETE', url: `/v1/api-keys/${key.id}` })).json()).toEqual({
      id: key.id,
      revoked: true,
    });
    expect((await call(key.secret, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(401);
    expect((await call(ADMIN, { method: 'DELETE', url: `/v1/api-keys/${key.id}` })).statusCode).toBe(404);
    const agentWithout = await call(ADMIN, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'a', role: 'agent' },
    });
    expect(agentWithout.statusCode).toBe(422);
    expect(agentWithout.json().errors).toEqual([{ path: 'agentId', message: 'is required for role agent' }]);
  });

  it('lets only the platform key create accounts, whose data is invisible to other accounts', async () => {
    expect(
      (await call(ADMIN, { method: 'POST', url: '/v1/accounts', payload: { name: 'Other brokerage' } })).statusCode,
    ).toBe(403);
    const res = await call(PLATFORM, { method: 'POST', url: '/v1/accounts', payload: { name: 'Other brokerage' } });
    expect(res.statusCode).toBe(201);
    const { account, adminKey } = res.json();
    expect(account).toMatchObject({ id: expect.stringMatching(/^acc_/), name: 'Other brokerage' });
    const mine = (await call(ADMIN, { method: 'POST', url: '/v1/listings', payload: listingBody() })).json();
    expect((await call(adminKey.secret, { method: 'GET', url: `/v1/listings/${mine.id}` })).statusCode).toBe(404);
    expect((await call(adminKey.secret, { method: 'GET', url: '/v1/listings' })).json().total).toBe(0);
    expect((await call(PLATFORM, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(403);
  });

  it('replays a POST with the same Idempotency-Key, refuses it with another body, and stores one listing', async () => {
    const headers = { 'idempotency-key': 'create-1' };
    const first = await call(ADMIN, { method: 'POST', url: '/v1/listings', payload: listingBody(), headers });
    const second = await call(ADMIN, { method: 'POST', url: '/v1/listings', payload: listingBody(), headers });
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.json()).toEqual(first.json());
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers['idempotent-replayed']).toBe('true');
    const other = await call(ADMIN, {
      method: 'POST',
      url: '/v1/listings',
      payload: listingBody({ status: 'pending' }),
      headers,
    });
    expect(other.statusCode).toBe(422);
    expect(other.json().code).toBe('idempotency_key_reused');
    expect((await call(ADMIN, { method: 'GET', url: '/v1/listings' })).json().total).toBe(1);
    const failed = await call(ADMIN, {
      method: 'POST',
      url: '/v1/listings',
      payload: { bad: true },
      headers: { 'idempotency-key': 'k2' },
    });
    expect(failed.statusCode).toBe(422);
    expect(
      (
        await call(ADMIN, {
          method: 'POST',
          url: '/v1/listings',
          payload: listingBody(),
          headers: { 'idempotency-key': 'k2' },
        })
      ).statusCode,
    ).toBe(201);
  });

  it('never keeps a secret for a replay: a repeated key or account creation answers the same, secret left out', async () => {
    type Json = Record<string, unknown>;
    // The object that holds the secret, in an answer.
    const calls: Array<{ key: string; url: string; payload: Json; holder: (answer: Json) => Json }> = [
      { key: ADMIN, url: '/v1/api-keys', payload: { name: 'feed', role: 'integration' }, holder: (a) => a },
      { key: PLATFORM, url: '/v1/accounts', payload: { name: 'Acme' }, holder: (a) => a.adminKey as Json },
    ];
    for (const { key, url, payload, holder } of calls) {
      const send = () => call(key, { method: 'POST', url, payload, headers: { 'idempotency-key': `secret-${url}` } });
      const first = await send();
      expect(first.statusCode).toBe(201);
      expect(first.headers['cache-control']).toBe('no-store');
      const secret = holder(first.json()).secret;
      expect(secret).toEqual(expect.stringMatching(/^ek_/));

      const replay = await send();
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.headers['cache-control']).toBe('no-store');
      const expected = first.json();
      delete holder(expected).secret;
      expect(replay.json()).toEqual(expected);
      // The secret works, and is nowhere in the gateway's file.
      expect((await call(String(secret), { method: 'GET', url: '/v1/listings' })).statusCode).not.toBe(401);
      for (const file of ['gateway.sqlite', 'gateway.sqlite-wal'].filter((f) => existsSync(join(dir, f))))
        expect(readFileSync(join(dir, file)).includes(String(secret))).toBe(false);
    }
  });

  it('answers 409 to a replay while the first request with the key is still running', async () => {
    const slowBody = listingBody();
    const [a, b] = await Promise.all([
      call(ADMIN, { method: 'POST', url: '/v1/listings', payload: slowBody, headers: { 'idempotency-key': 'race' } }),
      call(ADMIN, { method: 'POST', url: '/v1/listings', payload: slowBody, headers: { 'idempotency-key': 'race' } }),
    ]);
    const statuses = [a.statusCode, b.statusCode].sort();
    expect([
      [201, 201],
      [201, 409],
    ]).toContainEqual(statuses);
    expect((await call(ADMIN, { method: 'GET', url: '/v1/listings' })).json().total).toBe(1);
  });

  it("refuses to revoke the account's last admin key (409), and allows it once another admin key exists", async () => {
    const keys = (await call(ADMIN, { method: 'GET', url: '/v1/api-keys' })).json().items as Array<{
      id: string;
      role: string;
    }>;
    const admins = keys.filter((k) => k.role === 'admin');
    expect(admins).toHaveLength(1);
    const refused = await call(ADMIN, { method: 'DELETE', url: `/v1/api-keys/${admins[0].id}` });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('last_admin_key');
    expect((await call(ADMIN, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(200);

    const second = (
      await call(ADMIN, { method: 'POST', url: '/v1/api-keys', payload: { name: 'ops', role: 'admin' } })
    ).json();
    expect((await call(second.secret, { method: 'DELETE', url: `/v1/api-keys/${admins[0].id}` })).statusCode).toBe(200);
    expect((await call(ADMIN, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(401);
    expect((await call(second.secret, { method: 'DELETE', url: `/v1/api-keys/${second.id}` })).statusCode).toBe(409);
  });

  it('retires the key of the previous ADMIN_API_KEY or PLATFORM_API_KEY when the variable changes', async () => {
    await product.close();
    const [admin2, platform2] = [`${ADMIN}-rotated`, `${PLATFORM}-rotated`];
    product = await composeEmbedded(config({ adminApiKey: admin2, platformApiKey: platform2 }), log);
    expect((await call(ADMIN, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(401);
    expect((await call(admin2, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(200);
    const account = { method: 'POST' as const, url: '/v1/accounts', payload: { name: 'Acme' } };
    expect((await call(PLATFORM, account)).statusCode).toBe(401);
    expect((await call(platform2, account)).statusCode).toBe(201);
  });

  it('keeps everything across a restart and does not mint new keys; a page cursor still works', async () => {
    const created = (await call(ADMIN, { method: 'POST', url: '/v1/listings', payload: listingBody() })).json();
    await call(ADMIN, {
      method: 'POST',
      url: '/v1/listings',
      payload: listingBody({ externalId: 'second', source: 'test' }),
    });
    const key = (
      await call(ADMIN, { method: 'POST', url: '/v1/api-keys', payload: { name: 'k', role: 'admin' } })
    ).json();
    const { nextCursor } = (await call(ADMIN, { method: 'GET', url: '/v1/listings?limit=1' })).json();
    expect(nextCursor).toEqual(expect.any(String));
    await product.close();
    product = await composeEmbedded(config(), log);
    expect(product.boot.generated).toEqual({});
    expect((await call(key.secret, { method: 'GET', url: `/v1/listings/${created.id}` })).json()).toEqual(created);
    const next = await call(ADMIN, { method: 'GET', url: `/v1/listings?limit=1&cursor=${nextCursor}` });
    expect(next.statusCode).toBe(200);
    expect(next.json().items).toHaveLength(1);
  });

  it('generates the admin and platform keys on a first start without them, and they work', async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
    product = await composeEmbedded(config({ adminApiKey: undefined, platformApiKey: undefined }), log);
    const { admin, platform } = product.boot.generated;
    expect(admin).toMatch(/^ek_/);
    expect((await call(admin!, { method: 'GET', url: '/v1/listings' })).statusCode).toBe(200);
    expect((await call(platform!, { method: 'POST', url: '/v1/accounts', payload: { name: 'x' } })).statusCode).toBe(
      201,
    );
  });
});

describe('rate limits per key', () => {
  it('answers 429 with Retry-After past the limit, with RateLimit headers on every answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'embedded-rl-'));
    const product = await startEmbedded(dir, { adminApiKey: ADMIN, rateLimitPerMinute: 3 });
    try {
      const get = () =>
        product.app.inject({ method: 'GET', url: '/v1/listings', headers: { authorization: `Bearer ${ADMIN}` } });
      const first = await get();
      expect(first.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '2' });
      await get();
      await get();
      const limited = await get();
      expect(limited.statusCode).toBe(429);
      expect(limited.json().code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect((await product.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    } finally {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
