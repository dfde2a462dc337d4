import { mkdtempSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded, type EmbeddedProduct } from '../src/compose';

const ADMIN = 'ek_logs_test_admin_0123456789abcdefghijk';

/** The embedded product writing its log lines to `lines`, as JSON or as readable lines. */
async function productLoggingTo(pretty: boolean) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'logs-'));
  const product: EmbeddedProduct = await composeEmbedded(
    { port: 0, host: '127.0.0.1', dataDir: dir, adminApiKey: ADMIN, rateLimitPerMinute: 1000, logLevel: 'info' },
    createLogger({ service: 'embedded', level: 'info', destination, pretty }),
  );
  return {
    lines,
    product,
    call: (options: { method?: 'GET' | 'POST'; url: string; id: string; payload?: unknown }) =>
      product.app.inject({
        method: options.method ?? 'GET',
        url: options.url,
        payload: options.payload as string | undefined,
        headers: {
          authorization: `Bearer ${ADMIN}`,
          'x-request-id': options.id,
          ...(options.payload ? { 'content-type': 'application/json' } : {}),
        },
      }),
    async close() {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('log lines of the embedded product', () => {
  describe('as JSON', () => {
    let p: Awaited<ReturnType<typeof productLoggingTo>>;
    const json = () => p.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    beforeAll(async () => {
      p = await productLoggingTo(false);
    });
    afterAll(() => p?.close());

    it('name the account and the key id of keyed requests, the service once, and never the key', async () => {
      const res = await p.call({ url: '/v1/listings', id: 'logs-test-1' });
      expect(res.statusCode).toBe(200);
      const completed = json().find((l) => l.requestId === 'logs-test-1' && l.msg === 'request completed');
      expect(completed).toMatchObject({ accountId: expect.stringMatching(/^acc_/), keyId: expect.any(String) });
      for (const l of p.lines) expect(l.match(/"service":/g) ?? []).toHaveLength(1);
      expect(p.lines.join('\n')).not.toContain(ADMIN);
    });

    it('end a request with its method, its URL (redacted as everywhere), status and time', async () => {
      const res = await p.call({ url: '/v1/listings?limit=2&q=ann.private%40example.com', id: 'logs-test-2' });
      expect(res.statusCode).toBe(200);
      const mine = json().filter((l) => l.requestId === 'logs-test-2');
      expect(mine.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
      expect(mine[1]).toMatchObject({
        req: { method: 'GET', url: '/v1/listings?limit=2&q=[redacted]' },
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
        keyId: expect.any(String),
      });
      expect(p.lines.join('\n')).not.toContain('ann.private');
    });

    it('name the fields that failed validation, without their values', async () => {
      const res = await p.call({
        method: 'POST',
        url: '/v1/listings',
        id: 'logs-test-3',
        payload: { externalId: 'X-1', source: 'acme', pricing: { listPrice: -5 }, secretWord: 'swordfish' },
      });
      expect(res.statusCode).toBe(422);
      const refused = json().find((l) => l.requestId === 'logs-test-3' && l.code === 'validation_failed');
      expect(refused).toMatchObject({ status: 422, msg: 'The body did not pass validation' });
      const paths = (refused!.errors as { path: string }[]).map((e) => e.path);
      expect(paths).toEqual(expect.arrayContaining(['pricing.listPrice', 'secretWord']));
      expect(p.lines.join('\n')).not.toContain('swordfish');
    });

    it('state the limit a body over it broke, in the answer and the log line', async () => {
      const res = await p.call({
        method: 'POST',
        url: '/v1/listings',
        id: 'logs-test-4',
        payload: JSON.stringify({ description: 'x'.repeat(5 * 1024 * 1024) }),
      });
      expect(res.statusCode).toBe(413);
      expect(res.json().detail).toBe(
        'The request body is larger than this endpoint accepts: at most 5 MiB (5242880 bytes)',
      );
      const refused = json().find((l) => l.requestId === 'logs-test-4' && l.code === 'payload_too_large');
      expect(refused?.msg).toContain('at most 5 MiB (5242880 bytes)');
    });
  });

  it('as readable lines: one per request, with method, URL, status, time, key id and why it was refused', async () => {
    const p = await productLoggingTo(true);
    try {
      const before = p.lines.length;
      expect((await p.call({ url: '/v1/listings?limit=1', id: 'pretty-1' })).statusCode).toBe(200);
      expect((await p.call({ url: '/v1/listings/lst_nope', id: 'pretty-2' })).statusCode).toBe(404);
      const bad = { externalId: 'X-1', source: 'acme', pricing: { listPrice: -5 } };
      expect((await p.call({ method: 'POST', url: '/v1/listings', id: 'pretty-3', payload: bad })).statusCode).toBe(
        422,
      );
      const written = p.lines.slice(before);
      expect(written).toHaveLength(3);
      expect(written[0]).toMatch(/INFO.*\[embedded\] GET \/v1\/listings\?limit=1 200 \d+\.\d ms key key_\S+$/);
      expect(written[1]).toMatch(
        /GET \/v1\/listings\/lst_nope 404 \d+\.\d ms key key_\S+ - listing_not_found: Listing lst_nope does not exist$/,
      );
      expect(written[2]).toMatch(
        /POST \/v1\/listings 422 \d+\.\d ms key key_\S+ - validation_failed: The body did not pass validation \(.*pricing\.listPrice: /,
      );
      expect(written.join('\n')).not.toContain('incoming request');
      expect(written.join('\n')).not.toContain('{');
    } finally {
      await p.close();
    }
  });
});
