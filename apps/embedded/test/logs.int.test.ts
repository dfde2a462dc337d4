import { mkdtempSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded } from '../src/compose';

const ADMIN = 'ek_logs_test_admin_0123456789abcdefghijk';

describe('log lines of the embedded product', () => {
  it('name the account and the key id of keyed requests, the service once, and never the key', async () => {
    const lines: Record<string, unknown>[] = [];
    const raw: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n').filter(Boolean)) {
          raw.push(l);
          lines.push(JSON.parse(l));
        }
        done();
      },
    });
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    const product = await composeEmbedded(
      { port: 0, host: '127.0.0.1', dataDir: dir, adminApiKey: ADMIN, rateLimitPerMinute: 1000, logLevel: 'info' },
      createLogger({ service: 'embedded', level: 'info', destination }),
    );
    try {
      const res = await product.app.inject({
        url: '/v1/listings',
        headers: { authorization: `Bearer ${ADMIN}`, 'x-request-id': 'logs-test-1' },
      });
      expect(res.statusCode).toBe(200);
      const completed = lines.find((l) => l.requestId === 'logs-test-1' && l.msg === 'request completed');
      expect(completed).toMatchObject({ accountId: expect.stringMatching(/^acc_/), keyId: expect.any(String) });
      for (const l of raw) expect(l.match(/"service":/g) ?? []).toHaveLength(1);
      expect(raw.join('\n')).not.toContain(ADMIN);
    } finally {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
