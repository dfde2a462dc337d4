import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeEmbedded, type EmbeddedConfig, type EmbeddedProduct } from '@estate/embedded';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import pino, { type Logger } from 'pino';

export const ADMIN = 'ek_edge_test_admin_0123456789abcdefghijkl';

export interface EdgeProduct {
  product: EmbeddedProduct;
  /** A request with `Authorization: Bearer <key>` (none for null), from 127.0.0.1 unless `remoteAddress` says otherwise. */
  call(key: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Listens on a free local port and returns the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** The embedded product on a fresh data folder, as attackers meet it: quiet logs unless a logger is given. */
export async function startProduct(over: Partial<EmbeddedConfig> = {}, log?: Logger): Promise<EdgeProduct> {
  const dir = mkdtempSync(join(tmpdir(), 'edge-'));
  const product = await composeEmbedded(
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      adminApiKey: ADMIN,
      rateLimitPerMinute: 1000,
      anonymousRateLimitPerMinute: 1000,
      logLevel: 'silent',
      ...over,
    },
    log ?? pino({ level: 'silent' }),
  );
  return {
    product,
    call: (key, options) =>
      product.app.inject({
        ...options,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(options.headers ?? {}) },
      }),
    async listen() {
      await product.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = product.app.server.address() as import('node:net').AddressInfo;
      return `http://127.0.0.1:${port}`;
    },
    async close() {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** How many listings the admin key sees (to show that a refused write left nothing behind). */
export async function listingCount(edge: EdgeProduct): Promise<number> {
  const res = await edge.call(ADMIN, { method: 'GET', url: '/v1/listings?limit=1' });
  expect(res.statusCode).toBe(200);
  return res.json().total as number;
}
