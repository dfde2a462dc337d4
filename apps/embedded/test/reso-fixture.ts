import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListingIndex } from '@estate/search';
import pino from 'pino';
import { composeEmbedded, type EmbeddedProduct } from '../src/compose';

export const RESO_ADMIN = 'ek_reso_client_admin_0123456789abcdefghij';

/** The embedded product on a throwaway data folder, listening on a free port (on the index given, SQLite by default). */
export async function listeningProduct(
  options: { listingIndex?: ListingIndex } = {},
): Promise<{ product: EmbeddedProduct; url: string; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'estate-reso-'));
  const product = await composeEmbedded(
    { port: 0, host: '127.0.0.1', dataDir, adminApiKey: RESO_ADMIN, rateLimitPerMinute: 100_000, logLevel: 'silent' },
    pino({ level: 'silent' }),
    options,
  );
  await product.app.listen({ port: 0, host: '127.0.0.1' });
  return {
    product,
    url: `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`,
    async close() {
      await product.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
