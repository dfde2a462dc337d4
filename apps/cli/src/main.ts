import { parseArgs } from 'node:util';
import { apiKeyCreate } from '@estate/contracts/accounts';
import { composeAccess, type AgentsReader } from '@estate/gateway';
import { readAgent } from '@estate/leads';
import { reindexListings } from '@estate/listings';
import { exitOnStartFailure } from '@estate/platform/lifecycle';
import { AppError } from '@estate/platform/errors';
import { createLogger } from '@estate/platform/logging';
import { ElasticsearchListingIndex } from '@estate/search/elasticsearch-listing.index';
import { SqliteListingIndex } from '@estate/search/sqlite-listing.index';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { storeFile } from '@estate/embedded';
import { type DocumentStore } from '@estate/store';
import { feeds, listen } from './api-commands';
import { loadApiUrl, loadTarget, type CliTarget } from './config';
import { FEEDS_USAGE } from './feeds-args';
import { openStore } from './stores';

const USAGE = `Usage: npm run cli -- <command>

  accounts create <name>                        create an account and print its first admin key
  accounts list                                 list accounts
  keys create --role <admin|agent|integration> --name <name> [--agent-id <id>] [--account <id>]
                                                create a key and print its secret (shown once); an
                                                agent key must name an active agent of the account
  keys list [--account <id> | --platform]       list keys (never secrets); --platform: the platform keys
  keys revoke <keyId> [--account <id> | --platform]
                                                revoke a key at once
  reindex                                       rebuild the listing search index from the listings store
  webhooks listen --forward-to <url> [--events <a,b>] [--url <api>] [--key <key>] [--account <id>]
                                                follow the change feed and post each new event to <url>,
                                                signed (Standard Webhooks) with a secret it prints; without
                                                --key it uses a key of its own, revoked when it stops
${FEEDS_USAGE}

Works on DATA_DIR (default ./data; also while the server runs), or on the distributed
profile's database when MONGODB_URL is set. --account defaults to the default account.
reindex on the distributed profile also needs ELASTICSEARCH_URL (and reads LISTINGS_MONGODB_DATABASE,
ELASTICSEARCH_INDEX); the services may keep running meanwhile.`;

/** Rebuilds the search index from the listings store (see docs/decisions/0010). */
async function reindex(target: CliTarget): Promise<number> {
  const log = createLogger({ service: 'cli', level: 'warn' });
  if (target.kind === 'embedded') {
    // The index lives in the listings file beside the documents; SQLite's locking lets the server run meanwhile.
    const store = SqliteDocumentStore.open(storeFile(target.dataDir, 'listings'));
    const index = new SqliteListingIndex({ database: store.database });
    try {
      const report = await reindexListings(store, index);
      process.stdout.write(`${report.indexed} listings indexed; ${report.removed} gone meanwhile removed\n`);
      return 0;
    } finally {
      await index.close();
      await store.close();
    }
  }
  if (!target.elasticsearchUrl)
    throw new AppError('validation_failed', 'Set ELASTICSEARCH_URL to reindex the distributed profile');
  const store = await MongoDocumentStore.connect(target.mongodbUrl, { dbName: target.listingsDatabase });
  const index = ElasticsearchListingIndex.connect(target.elasticsearchUrl, { alias: target.elasticsearchIndex, log });
  try {
    const report = await reindexListings(store, index);
    process.stdout.write(
      `${report.indexed} listings indexed into ${target.elasticsearchIndex}; ${report.removed} gone meanwhile removed\n`,
    );
    return 0;
  } finally {
    await index.close();
    await store.close();
  }
}

/** Agents read from the leads store (opened only when an agent key is made). */
function agentsIn(target: CliTarget): AgentsReader & { close(): Promise<void> } {
  let leads: Promise<DocumentStore> | undefined;
  return {
    async state(who, agentId) {
      leads ??= openStore(target, 'leads');
      const agent = await readAgent(await leads, who.accountId, agentId);
      return agent ? { active: agent.active, version: agent.version } : null;
    },
    async close() {
      if (leads) await (await leads).close();
    },
  };
}

async function run(argv: string[]): Promise<number> {
  // Feeds take options of their own, parsed in feeds-args.ts.
  if (argv[0] === 'feeds') return feeds(argv.slice(1));
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      role: { type: 'string' },
      name: { type: 'string' },
      'agent-id': { type: 'string' },
      account: { type: 'string' },
      platform: { type: 'boolean' },
      'forward-to': { type: 'string' },
      events: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [area, action, ...rest] = positionals;
  if (values.help || !area) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  let target: CliTarget;
  try {
    target = loadTarget(process.env);
  } catch (err) {
    exitOnStartFailure(err);
  }
  if (area === 'reindex') return reindex(target);
  if (area === 'webhooks' && action === 'listen') {
    const forwardTo = values['forward-to'];
    if (!forwardTo || !URL.canParse(forwardTo))
      throw new AppError(
        'validation_failed',
        'Give the local URL: webhooks listen --forward-to http://127.0.0.1:4000/hook',
      );
    return listen(target, {
      forwardTo,
      apiUrl: values.url ?? loadApiUrl(process.env),
      apiKey: values.key,
      account: values.account,
      types: values.events?.split(',').filter(Boolean) ?? [],
    });
  }
  const store = await openStore(target);
  const agents = agentsIn(target);
  const access = await composeAccess(store, agents);
  const accountId = async () => {
    if (values.platform && values.account)
      throw new AppError('validation_failed', 'Give either --account or --platform, not both');
    // The platform keys belong to no account.
    if (values.platform) return '';
    if (values.account) return values.account;
    const fallback = await access.defaultAccount();
    if (!fallback)
      throw new AppError(
        'account_not_found',
        'There is no default account yet: start the server once, or pass --account <id>',
      );
    return fallback.id;
  };
  try {
    switch (`${area} ${action ?? ''}`.trim()) {
      case 'accounts create': {
        const name = rest.join(' ').trim();
        if (!name) throw new AppError('validation_failed', 'Give the account a name: accounts create "Acme Realty"');
        const { account, adminKey } = await access.createAccount(name);
        process.stdout.write(
          `account ${account.id}  ${account.name}\nadmin key ${adminKey.id}  secret (shown once): ${adminKey.secret}\n`,
        );
        return 0;
      }
      case 'accounts list':
        for (const a of await access.listAccounts()) process.stdout.write(`${a.id}  ${a.createdAt}  ${a.name}\n`);
        return 0;
      case 'keys create': {
        const parsed = apiKeyCreate.safeParse({ name: values.name, role: values.role, agentId: values['agent-id'] });
        if (!parsed.success)
          throw new AppError(
            'validation_failed',
            parsed.error.issues
              .map((i) => `--${String(i.path[0] ?? 'input').replace('agentId', 'agent-id')}: ${i.message}`)
              .join('; '),
          );
        if (values.platform)
          throw new AppError('validation_failed', 'Platform keys come from PLATFORM_API_KEY or the first start');
        const who = { accountId: await accountId(), keyId: 'cli', role: 'admin' as const, agentId: null };
        const key = await access.createKey(who, parsed.data);
        process.stdout.write(
          `key ${key.id}  role ${key.role}${key.agentId ? ` agent ${key.agentId}` : ''}\nsecret (shown once): ${key.secret}\n`,
        );
        return 0;
      }
      case 'keys list':
        for (const k of await access.listKeys(await accountId()))
          process.stdout.write(
            `${k.id}  ${k.role.padEnd(11)} ${k.prefix}…  ${k.createdAt}  ${k.name}${k.agentId ? ` (agent ${k.agentId})` : ''}\n`,
          );
        return 0;
      case 'keys revoke': {
        const keyId = rest[0];
        if (!keyId) throw new AppError('validation_failed', 'Name the key: keys revoke <keyId>');
        await access.revokeKey(await accountId(), keyId);
        process.stdout.write(`revoked ${keyId}\n`);
        return 0;
      }
      default:
        process.stderr.write(`Unknown command "${positionals.join(' ')}"\n\n${USAGE}\n`);
        return 2;
    }
  } finally {
    await agents.close();
    await store.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `${err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  },
);
