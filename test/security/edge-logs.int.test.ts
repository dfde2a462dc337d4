import { Writable } from 'node:stream';
import { createLogger } from '@estate/platform/logging';
import { ADMIN, listingCount, startProduct, type EdgeProduct } from './edge-product';

/** Query parameters a client might put a key in. */
const PARAMETERS = ['api_key', 'apiKey', 'key', 'token', 'access_token', 'auth', 'secret', 'password'];

describe('an API key sent in the URL', () => {
  let edge: EdgeProduct;
  const raw: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk, _enc, done) {
        raw.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    edge = await startProduct({ logLevel: 'info' }, createLogger({ service: 'embedded', level: 'info', destination }));
  });
  afterAll(async () => {
    await edge?.close();
  });

  it.each(PARAMETERS)('?%s=<key> is refused (keys ride only in the Authorization header)', async (name) => {
    const res = await edge.call(null, { method: 'GET', url: `/v1/listings?${name}=${ADMIN}` });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthorized');
  });

  it('never reaches a log line: request, refusal, validation failure, unknown route, key in the path', async () => {
    const secrets = PARAMETERS.map((name, i) => [name, `${ADMIN.slice(0, 20)}${name}${i}XYZsecret`] as const);
    const query = secrets.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
    const before = raw.length;
    const answers = [
      await edge.call(null, { method: 'GET', url: `/v1/listings?${query}`, headers: { 'x-request-id': 'leak-1' } }),
      await edge.call(ADMIN, { method: 'GET', url: `/v1/listings?${query}`, headers: { 'x-request-id': 'leak-2' } }),
      await edge.call(ADMIN, { method: 'GET', url: `/v1/nowhere?${query}`, headers: { 'x-request-id': 'leak-3' } }),
      await edge.call(ADMIN, { method: 'GET', url: `/v1/listings/${ADMIN}`, headers: { 'x-request-id': 'leak-4' } }),
      await edge.call(null, { method: 'GET', url: `/openapi.json?access_token=${ADMIN}` }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([401, 422, 404, 404, 200]);
    const written = raw.slice(before).join('\n');
    // The lines were written, with the URL, and only the secrets left out.
    const incoming = raw
      .slice(before)
      .map((l) => JSON.parse(l) as { msg?: string; requestId?: string; req?: { url: string } })
      .filter((l) => l.msg === 'incoming request');
    expect(incoming.map((l) => l.requestId)).toEqual(expect.arrayContaining(['leak-1', 'leak-2', 'leak-3', 'leak-4']));
    const first = incoming.find((l) => l.requestId === 'leak-1')!.req!.url;
    expect(first.startsWith('/v1/listings?api_key=[redacted]&apiKey=[redacted]&key=[redacted]')).toBe(true);
    for (const [, value] of secrets) expect(written).not.toContain(value);
    expect(written).not.toContain(ADMIN);
    expect(await listingCount(edge)).toBe(0);
  });
});
