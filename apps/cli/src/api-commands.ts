import { composeAccess } from '@estate/gateway';
import { AppError } from '@estate/platform/errors';
import { exitOnStartFailure } from '@estate/platform/lifecycle';
import { loadFeedsApi, loadTarget, type CliTarget } from './config';
import { runFeedsCommand } from './feeds';
import { FEEDS_USAGE, parseFeedsArgs } from './feeds-args';
import { openStore } from './stores';
import { listenAndForward, newListenSecret } from './webhooks-listen';

// The commands that talk to the running product's API, with a key given or one of the CLI's own.

/**
 * Runs `use` with `apiKey` when given; otherwise with a key of the CLI's own made in the data folder (the server
 * may be running), revoked when `use` ends.
 */
async function withKey<T>(
  target: CliTarget,
  own: { role: 'admin' | 'integration'; name: string; account?: string; apiKey?: string },
  use: (apiKey: string) => Promise<T>,
): Promise<T> {
  if (own.apiKey) return use(own.apiKey);
  const store = await openStore(target);
  try {
    const access = await composeAccess(store, { state: async () => null });
    const accountId = own.account ?? (await access.defaultAccount())?.id;
    if (!accountId) throw new AppError('account_not_found', 'There is no default account yet: start the server once');
    const who = { accountId, keyId: 'cli', role: 'admin' as const, agentId: null };
    const key = await access.createKey(who, { name: own.name, role: own.role });
    try {
      return await use(key.secret);
    } finally {
      await access.revokeKey(accountId, key.id);
    }
  } finally {
    await store.close();
  }
}

/** `webhooks listen`: forwards the feed to a local URL until Ctrl-C, with a key of its own unless given one. */
export async function listen(
  target: CliTarget,
  opts: { forwardTo: string; apiUrl: string; apiKey?: string; account?: string; types: string[] },
): Promise<number> {
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  const secret = newListenSecret();
  return withKey(
    target,
    { role: 'integration', name: 'webhooks listen', account: opts.account, apiKey: opts.apiKey },
    async (apiKey) => {
      process.stdout.write(`Your webhook signing secret is ${secret} (this session only)\n`);
      await listenAndForward({
        apiUrl: opts.apiUrl,
        apiKey,
        forwardTo: opts.forwardTo,
        secret,
        types: opts.types,
        intervalMs: 1000,
        signal: stop.signal,
        print: (line) => process.stdout.write(`${line}\n`),
      });
      return 0;
    },
  );
}

/** `feeds ...`: the feeds API of the running product, with ESTATE_API_KEY or an admin key of the CLI's own. */
export async function feeds(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`Usage: npm run cli -- feeds <command>\n\n${FEEDS_USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const command = parseFeedsArgs(argv);
  let target: CliTarget;
  let api: { url: string; key?: string };
  try {
    target = loadTarget(process.env);
    api = loadFeedsApi(process.env);
  } catch (err) {
    exitOnStartFailure(err);
  }
  const url = command.url ?? api.url;
  const io = {
    print: (line: string) => process.stdout.write(`${line}\n`),
    error: (line: string) => process.stderr.write(`${line}\n`),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    env: process.env,
  };
  return withKey(target, { role: 'admin', name: 'cli feeds', apiKey: api.key }, (key) =>
    runFeedsCommand(command, { url, key }, io),
  );
}
