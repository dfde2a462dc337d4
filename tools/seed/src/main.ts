// `npm run seed`: sandbox data for a newcomer. Without arguments it seeds the embedded profile's data folder
// (DATA_DIR, default ./data; the server must not be running on it); with `--url <base> --key <admin key>` (or
// SEED_URL and SEED_API_KEY) it seeds any running installation over HTTP.
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createEstateClient } from '@estate/client';
import { composeEmbedded, loadConfig, storeFile } from '@estate/embedded';
import { composeAccess, firstStartBanner } from '@estate/gateway';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import pino from 'pino';
import { seedSandbox } from './sandbox';

const USAGE = `Usage: npm run seed [-- --url <base url> --key <admin key>] [--listings <n>]
  Without --url: seeds the embedded data folder (DATA_DIR, default ./data) while the server is stopped.`;

async function seedOverHttp(url: string, key: string, listings: number): Promise<void> {
  const client = createEstateClient({ baseUrl: url, apiKey: key });
  const summary = await seedSandbox(client, { listings, log: (l) => process.stdout.write(`  ${l}\n`) });
  process.stdout.write(`Seeded ${url}: ${JSON.stringify(summary)}\n`);
}

async function seedEmbedded(listings: number): Promise<void> {
  const config = loadConfig(process.env);
  mkdirSync(config.dataDir, { recursive: true });
  const product = await composeEmbedded({ ...config, logLevel: 'silent' }, pino({ level: 'silent' }));
  // A key of its own for the seeding, revoked at the end: the installation's keys are never needed here.
  const store = SqliteDocumentStore.open(storeFile(config.dataDir, 'gateway'));
  // The seed makes an admin key only: no agent is ever looked up.
  const access = await composeAccess(store, { state: async () => null });
  try {
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
    process.stdout.write(firstStartBanner(product.boot, `http://${config.host}:${config.port}`, false));
    const account = await access.defaultAccount();
    if (!account) throw new Error('The data folder has no default account');
    const seeder = { accountId: account.id, keyId: 'seed', role: 'admin' as const, agentId: null };
    const key = await access.createKey(seeder, { name: 'sandbox seed', role: 'admin' });
    try {
      const client = createEstateClient({ baseUrl: url, apiKey: key.secret });
      const summary = await seedSandbox(client, { listings, log: (l) => process.stdout.write(`  ${l}\n`) });
      process.stdout.write(`Seeded ${config.dataDir} (account ${account.id}): ${JSON.stringify(summary)}\n`);
      process.stdout.write('Start the server with `npm start` and open /docs.\n');
    } finally {
      await access.revokeKey(account.id, key.id);
    }
  } finally {
    await product.close();
    await store.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: process.env.SEED_URL },
      key: { type: 'string', default: process.env.SEED_API_KEY },
      listings: { type: 'string', default: '24' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void process.stdout.write(`${USAGE}\n`);
  const listings = Number(values.listings);
  if (!Number.isInteger(listings) || listings < 1 || listings > 100) throw new Error('--listings must be 1..100');
  if (values.url) {
    if (!values.key) throw new Error('--url needs --key <admin key> (or SEED_API_KEY)');
    await seedOverHttp(values.url, values.key, listings);
  } else await seedEmbedded(listings);
}

main().catch((err: unknown) => {
  process.stderr.write(`seed failed: ${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
  process.exit(1);
});
