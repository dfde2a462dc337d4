import { listingBody } from '@estate/testing';
import { ADMIN, listingCount, startProduct, type EdgeProduct } from './edge-product';

/** Attacks on the rate limits of the embedded product: every refusal is checked, and that it left nothing behind. */
describe('rate limits under attack', () => {
  let edge: EdgeProduct;
  afterEach(async () => {
    await edge?.close();
  });

  const expectProblem = (
    res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
    code: string,
  ) => {
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code, requestId: res.headers['x-request-id'] });
  };

  it('guessing keys: wrong, malformed, revoked and missing keys all count against the address, and are refused 429 before 401', async () => {
    edge = await startProduct({ anonymousRateLimitPerMinute: 6 });
    const created = await edge.call(ADMIN, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'to revoke', role: 'integration' },
    });
    const revoked = created.json() as { id: string; secret: string };
    expect((await edge.call(ADMIN, { method: 'DELETE', url: `/v1/api-keys/${revoked.id}` })).statusCode).toBe(200);

    const guesses: { key: string | null; authorization?: string }[] = [
      { key: 'ek_guess_000000000000000000000000000001' },
      { key: 'ek_guess_000000000000000000000000000002' },
      { key: null, authorization: `Basic ${ADMIN}` },
      { key: null },
      { key: revoked.secret },
      { key: 'ek_guess_000000000000000000000000000003' },
    ];
    for (const [i, guess] of guesses.entries()) {
      const res = await edge.call(guess.key, {
        method: 'POST',
        url: '/v1/listings',
        payload: listingBody({ externalId: `GUESS-${i}` }),
        headers: guess.authorization ? { authorization: guess.authorization } : {},
      });
      expect(res.statusCode).toBe(401);
      expectProblem(res, 'unauthorized');
      // One bucket for all of them: the address's.
      expect(res.headers['ratelimit-limit']).toBe('6');
      expect(res.headers['ratelimit-remaining']).toBe(String(5 - i));
    }
    for (const key of ['ek_guess_000000000000000000000000000004', null, revoked.secret]) {
      const res = await edge.call(key, {
        method: 'POST',
        url: '/v1/listings',
        payload: listingBody({ externalId: 'GUESS-limited' }),
      });
      expect(res.statusCode).toBe(429);
      expectProblem(res, 'rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['ratelimit-remaining']).toBe('0');
    }
    // Another address has a bucket of its own, and the live key is limited on its own count.
    const elsewhere = await edge.call('ek_guess_000000000000000000000000000005', {
      method: 'GET',
      url: '/v1/listings',
      remoteAddress: '203.0.113.9',
    });
    expect(elsewhere.statusCode).toBe(401);
    expect(elsewhere.headers['ratelimit-remaining']).toBe('5');
    const live = await edge.call(ADMIN, { method: 'GET', url: '/v1/listings' });
    expect(live.statusCode).toBe(200);
    expect(live.headers['ratelimit-limit']).toBe('1000');
    expect(await listingCount(edge)).toBe(0);
  });

  it('spoofing X-Forwarded-For buys no fresh allowance; a proxy named in TRUST_PROXY is believed', async () => {
    edge = await startProduct({ anonymousRateLimitPerMinute: 3 });
    const from = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i}` });
    for (let i = 0; i < 3; i++)
      expect((await edge.call(null, { url: '/v1/listings', headers: from(i) })).statusCode).toBe(401);
    const spoofed = await edge.call(null, { url: '/v1/listings', headers: from(99) });
    expect(spoofed.statusCode).toBe(429);
    expectProblem(spoofed, 'rate_limited');
    await edge.close();

    // Behind a proxy of the operator's own (loopback here), each client it names counts on its own.
    edge = await startProduct({ anonymousRateLimitPerMinute: 3, trustProxy: ['loopback'] });
    for (let i = 0; i < 3; i++)
      expect((await edge.call(null, { url: '/v1/listings', headers: from(1) })).statusCode).toBe(401);
    expect((await edge.call(null, { url: '/v1/listings', headers: from(1) })).statusCode).toBe(429);
    const other = await edge.call(null, { url: '/v1/listings', headers: from(2) });
    expect(other.statusCode).toBe(401);
    expect(other.headers['ratelimit-remaining']).toBe('2');
  });

  it('flooding with a live key: limited per key wherever the requests come from, other keys unaffected', async () => {
    edge = await startProduct({ rateLimitPerMinute: 4 });
    const other = (
      await edge.call(ADMIN, { method: 'POST', url: '/v1/api-keys', payload: { name: 'other', role: 'admin' } })
    ).json() as { secret: string };
    const addresses = ['198.51.100.1', '198.51.100.2', '198.51.100.3'];
    for (const [i, remoteAddress] of addresses.entries()) {
      const res = await edge.call(ADMIN, { method: 'GET', url: '/v1/listings', remoteAddress });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-remaining']).toBe(String(2 - i));
    }
    const refused = await edge.call(ADMIN, {
      method: 'POST',
      url: '/v1/listings',
      payload: listingBody({ externalId: 'FLOOD-1' }),
      remoteAddress: '198.51.100.4',
    });
    expect(refused.statusCode).toBe(429);
    expectProblem(refused, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const byOther = await edge.call(other.secret, { method: 'GET', url: '/v1/listings?limit=1' });
    expect(byOther.statusCode).toBe(200);
    expect(byOther.json().total).toBe(0);
    expect(byOther.headers['ratelimit-remaining']).toBe('3');
  });

  it('probing unknown /v1 routes with a key: the 404 carries the RateLimit headers and counts', async () => {
    edge = await startProduct({ rateLimitPerMinute: 3 });
    const answers = [];
    for (const url of ['/v1/nothing-here', '/v1/listings/lst_1/nothing', '/v1']) {
      const res = await edge.call(ADMIN, { method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expectProblem(res, 'not_found');
      answers.push(res.headers['ratelimit-remaining']);
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    }
    expect(answers).toEqual(['2', '1', '0']);
    const limited = await edge.call(ADMIN, { method: 'GET', url: '/v1/nothing-here' });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('every keyed answer carries the RateLimit headers: success, validation failure, refusal by role', async () => {
    edge = await startProduct();
    const agentKey = (
      await edge.call(ADMIN, {
        method: 'POST',
        url: '/v1/api-keys',
        payload: { name: 'integration', role: 'integration' },
      })
    ).json() as { secret: string };
    const answers = [
      await edge.call(ADMIN, { method: 'GET', url: '/v1/listings' }),
      await edge.call(ADMIN, { method: 'GET', url: '/v1/listings?limit=0' }),
      await edge.call(agentKey.secret, { method: 'GET', url: '/v1/api-keys' }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 422, 403]);
    for (const res of answers) {
      expect(res.headers['ratelimit-limit']).toBe('1000');
      expect(res.headers['ratelimit-remaining']).toEqual(expect.any(String));
      expect(res.headers['ratelimit-reset']).toEqual(expect.any(String));
    }
  });
});
