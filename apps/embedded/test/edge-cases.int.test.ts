import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const run = promisify(execFile);
const ADMIN = 'ek_edge_cases_admin_0123456789abcdefghijk';

describe('answers a fuzzer looks for', () => {
  let dir: string;
  let product: EmbeddedProduct;
  const auth = { authorization: `Bearer ${ADMIN}` };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-cases-'));
    product = await startEmbedded(dir, { adminApiKey: ADMIN });
  });
  afterAll(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 405 with Allow for a method a path does not support, before reading body or key', async () => {
    for (const method of ['TRACE', 'QUERY', 'PUT'] as const) {
      const res = await product.app.inject({ method: method as 'PUT', url: '/v1/listings', payload: 'x' });
      expect([method, res.statusCode]).toEqual([method, 405]);
      expect(res.headers.allow).toBe('GET, HEAD, POST');
      expect(res.json()).toMatchObject({ code: 'method_not_allowed', requestId: res.headers['x-request-id'] });
    }
    const item = await product.app.inject({ method: 'POST', url: '/v1/listings/lst_1', headers: auth });
    expect(item.statusCode).toBe(405);
    expect(item.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
    const bulk = await product.app.inject({ method: 'OPTIONS', url: '/v1/listings/bulk', headers: auth });
    expect(bulk.headers.allow).toBe('POST');
    expect((await product.app.inject({ method: 'GET', url: '/v1/nowhere', headers: auth })).statusCode).toBe(404);
  });

  it('counts a keyed 405 against the key and says so in the RateLimit headers, as every keyed answer does', async () => {
    const first = await product.app.inject({ method: 'PUT', url: '/v1/listings', headers: auth, payload: 'x' });
    const second = await product.app.inject({ method: 'PUT', url: '/v1/listings', headers: auth, payload: 'x' });
    for (const res of [first, second]) {
      expect(res.statusCode).toBe(405);
      expect(res.headers['ratelimit-limit']).toBe('1000');
      expect(res.headers['ratelimit-reset']).toEqual(expect.any(String));
    }
    expect(Number(second.headers['ratelimit-remaining'])).toBe(Number(first.headers['ratelimit-remaining']) - 1);
    // Without a key, the client address's limit.
    const anonymous = await product.app.inject({ method: 'PUT', url: '/v1/listings', payload: 'x' });
    expect(anonymous.statusCode).toBe(405);
    expect(anonymous.headers['ratelimit-limit']).toEqual(expect.any(String));
  });

  it('validates over-long path ids (422 problem+json) instead of the router refusing them', async () => {
    const res = await product.app.inject({ url: `/v1/listings/${'x'.repeat(300)}`, headers: auth });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('refuses a multipart upload without a boundary as malformed', async () => {
    const res = await product.app.inject({
      method: 'POST',
      url: '/v1/listings/lst_1/media',
      headers: { ...auth, 'content-type': 'multipart/form-data' },
      payload: 'x',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'malformed_request' });
  });
});

/**
 * A client process that writes the whole body before it reads the answer, as many HTTP clients do: POSTs a 12 MB
 * JSON body and prints the answer, or the error its connection ended with (EPIPE or ECONNRESET when the server
 * closed it on unread bytes).
 */
const POST_12_MB = `
const http = require('node:http');
const [url, key] = process.argv.slice(1);
const body = Buffer.from(JSON.stringify({ propertyDetails: { description: 'x'.repeat(12 * 1024 * 1024) } }));
const out = {};
const req = http.request(url, { method: 'POST', headers: { authorization: 'Bearer ' + key,
  'content-type': 'application/json', 'content-length': body.length } }, (res) => {
  let text = '';
  res.setEncoding('utf8').on('data', (c) => (text += c)).on('end', () => {
    Object.assign(out, { status: res.statusCode, contentType: res.headers['content-type'],
      requestId: res.headers['x-request-id'], body: text });
  });
});
req.on('error', (err) => (out.error = err.code));
req.on('close', () => setImmediate(() => console.log(JSON.stringify(out))));
req.end(body);
`;

describe('bodies over the limit, sent by a real HTTP client', () => {
  it('answers a 12 MB JSON body 413 problem+json that the client receives (no reset), and stores nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-413-'));
    const product = await startEmbedded(dir, { adminApiKey: ADMIN });
    try {
      await product.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = product.app.server.address() as import('node:net').AddressInfo;
      const base = `http://127.0.0.1:${port}`;
      const headers = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
      // The client is another process, as it would be: in this one, its writes and the server's close take turns.
      const { stdout } = await run(process.execPath, ['-e', POST_12_MB, `${base}/v1/listings`, ADMIN]);
      const answer = JSON.parse(stdout) as { status: number; contentType: string; requestId: string; body: string };
      expect(answer).toEqual(expect.objectContaining({ status: 413, contentType: 'application/problem+json' }));
      expect(answer).not.toHaveProperty('error');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'payload_too_large', requestId: answer.requestId });
      const listed = await fetch(`${base}/v1/listings`, { headers });
      expect(((await listed.json()) as { total: number }).total).toBe(0);
    } finally {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('requests the HTTP parser refuses', () => {
  it('answers headers that are too large with 431 problem+json; a long query still reaches validation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-431-'));
    const product = await startEmbedded(dir);
    try {
      await product.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = product.app.server.address() as import('node:net').AddressInfo;
      const long = await fetch(`http://127.0.0.1:${port}/v1/listings?cursor=${'x'.repeat(20_000)}`);
      expect(long.status).toBe(401);
      const res = await fetch(`http://127.0.0.1:${port}/v1/listings`, { headers: { 'x-padding': 'x'.repeat(70_000) } });
      expect(res.status).toBe(431);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'headers_too_large', requestId: res.headers.get('x-request-id') });
    } finally {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
