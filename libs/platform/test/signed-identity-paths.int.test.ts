import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { requireSignedIdentity } from '../src/auth';
import { createHttpApp } from '../src/http';

/** A service port reached directly: every spelling of a `/v1` path needs the gateway's signature before any handler. */
describe('a service behind the gateway, reached directly', () => {
  let app: FastifyInstance;
  let handled = 0;

  beforeAll(async () => {
    app = await createHttpApp({ service: 'test', logger: pino({ level: 'silent' }) });
    requireSignedIdentity(app, { secrets: ['test-secret-0123456789abcdefghij'], callers: { gateway: '*' } });
    // A handler that does not check the caller itself: only the hook stands in the way.
    app.get('/v1/things', async () => {
      handled++;
      return { items: [] };
    });
    await app.ready();
  });
  afterAll(() => app.close());

  it('refuses unsigned requests on every spelling of a /v1 route with 401, and the handler never runs', async () => {
    for (const url of ['/v1/things', '/%761/things', '/v1/%74hings', '/v1//things', '/V1/things', '/v1/things/']) {
      const res = await app.inject({ url });
      if (res.statusCode === 404) continue; // a spelling the router does not take is no way in either
      expect([url, res.statusCode]).toEqual([url, 401]);
    }
    expect(handled).toBe(0);
  });

  it('leaves health and metrics open', async () => {
    expect((await app.inject({ url: '/health/live' })).statusCode).toBe(200);
  });
});
