import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListingIndex } from '@estate/search';
import { listingBody } from '@estate/testing';
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

/**
 * Listings that give every filter scenario of RESO's Core tests something to match (the RESOScript's sample values:
 * BedroomsTotal 1 and 15, ListPrice 100000.00 and 1234567.89, StandardStatus ActiveUnderContract,
 * AccessibilityFeatures AccessibleApproachWithRamp and Visitable, OnMarketDate 2019-12-31, OnMarketTimestamp
 * 2019-12-31T23:55:55-09:00), and more than two pages of five. Answers the listing ids, the first one first.
 */
export async function seedCoreListings(url: string, key: string): Promise<string[]> {
  const specs: Array<{ status: string; listedAt: string; price: number; beds: number; features: string[] }> = [
    {
      status: 'active_under_contract',
      listedAt: '2019-12-31T23:55:55-09:00',
      price: 100000,
      beds: 1,
      features: ['Accessible Approach with Ramp', 'Visitable'],
    },
    {
      status: 'active',
      listedAt: '2019-12-31T12:00:00Z',
      price: 250000,
      beds: 3,
      features: ['Accessible Approach with Ramp'],
    },
    { status: 'pending', listedAt: '2018-06-01T00:00:00Z', price: 500000, beds: 5, features: ['Visitable'] },
    { status: 'active', listedAt: '2021-03-01T00:00:00Z', price: 300000, beds: 2, features: [] },
    ...Array.from({ length: 8 }, (_, i) => ({
      status: i % 2 ? 'active' : 'closed',
      listedAt: `2022-0${i + 1}-01T00:00:00Z`,
      price: 150000 + i * 100000,
      beds: i,
      features: [],
    })),
  ];
  const ids: string[] = [];
  for (const s of specs) {
    const res = await fetch(`${url}/v1/listings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(
        listingBody({
          status: s.status,
          listedAt: s.listedAt,
          pricing: { listPrice: s.price },
          propertyDetails: { propertyType: 'residential', bedrooms: s.beds, features: s.features },
        }),
      ),
    });
    if (res.status !== 201) throw new Error(`seeding answered ${res.status}: ${await res.text()}`);
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}
