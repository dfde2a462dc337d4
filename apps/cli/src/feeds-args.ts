import { parseArgs } from 'node:util';
import { AppError } from '@estate/platform/errors';

export const FEEDS_USAGE = `  feeds add --name <name> --service-root <url> [--source <name>] [--filter <$filter>] [--page-size <n>]
            [--requests-per-second <n>] [--requests-per-hour <n>] [--every-minutes <n>] [--media] [--disabled]
            [--quarantine-runs <n>] [--max-removed-percent <n>]
            [--client-id <id> --token-url <url> [--scope <s>]] [--secret-env <VAR> | --secret-stdin]
                                                connect a RESO Web API feed; its secret (the bearer token, or
                                                with --client-id the client secret) is read from FEED_TOKEN /
                                                FEED_CLIENT_SECRET, another variable, or stdin, never an argument
  feeds list                                    list feeds
  feeds show <feedId>                           a feed (never its secret)
  feeds run <feedId> [--dry-run] [--reconcile] [--no-follow]
                                                start a run and follow it to its end, then print its ledger;
                                                exits 1 unless the run succeeded
  feeds runs <feedId>                           a feed's runs, newest first
  feeds show-run <runId>                        a run and its ledger
  (feeds: --json prints the API's answer; the API is ESTATE_API_URL or --url, else HOST/PORT; the key
   is ESTATE_API_KEY, else an admin key of the CLI's own in the data folder, revoked when it is done)`;

/** Where the secret of a new feed comes from: a variable of the environment, or standard input. */
export type SecretSource = { from: 'env'; name: string } | { from: 'stdin' };

interface Common {
  /** The API (`--url`), when given. */
  url?: string;
  /** Print the API's JSON answer instead of the readable form. */
  json: boolean;
}

export type FeedsCommand = Common &
  (
    | { action: 'add'; body: Record<string, unknown>; secret: SecretSource }
    | { action: 'list' }
    | { action: 'show'; feedId: string }
    | { action: 'run'; feedId: string; dryRun: boolean; reconcile: boolean; follow: boolean }
    | { action: 'runs'; feedId: string }
    | { action: 'show-run'; runId: string }
  );

const options = {
  name: { type: 'string' },
  'service-root': { type: 'string' },
  source: { type: 'string' },
  filter: { type: 'string' },
  'page-size': { type: 'string' },
  'requests-per-second': { type: 'string' },
  'requests-per-hour': { type: 'string' },
  'every-minutes': { type: 'string' },
  media: { type: 'boolean' },
  disabled: { type: 'boolean' },
  'quarantine-runs': { type: 'string' },
  'max-removed-percent': { type: 'string' },
  'client-id': { type: 'string' },
  'token-url': { type: 'string' },
  scope: { type: 'string' },
  'secret-env': { type: 'string' },
  'secret-stdin': { type: 'boolean' },
  // Taken only to refuse them with a reason: a secret in the arguments lands in shell history and `ps`.
  token: { type: 'string' },
  'client-secret': { type: 'string' },
  secret: { type: 'string' },
  'dry-run': { type: 'boolean' },
  reconcile: { type: 'boolean' },
  'no-follow': { type: 'boolean' },
  url: { type: 'string' },
  json: { type: 'boolean' },
} as const;

const RUN_FLAGS = ['dry-run', 'reconcile', 'no-follow'];
const ADD_FLAGS = Object.keys(options).filter((f) => !RUN_FLAGS.includes(f) && f !== 'url' && f !== 'json');
/** The flags each action takes besides --url and --json. */
const FLAGS_OF: Record<string, string[]> = {
  add: ADD_FLAGS,
  list: [],
  show: [],
  run: RUN_FLAGS,
  runs: [],
  'show-run': [],
};

const usage = (detail: string) => new AppError('validation_failed', detail);

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw usage(`--${flag} takes a number, not "${value}"`);
  return n;
}

/** Drops the keys left undefined, so the API applies its defaults to what was not given. */
const defined = (o: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * `feeds <action> ...` (the arguments after `feeds`) into a command. Checks only what the API cannot (which
 * arguments go together, numbers, where the secret comes from); the feed itself is the API's to judge.
 */
export function parseFeedsArgs(argv: string[]): FeedsCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw usage(err instanceof Error ? err.message : String(err));
  }
  const { positionals, values: v } = parsed;
  const [action, ...rest] = positionals;
  for (const flag of ['token', 'client-secret', 'secret'] as const)
    if (v[flag] !== undefined)
      throw usage(
        `--${flag} is refused: a secret in the arguments lands in shell history and the process list. ` +
          'Set FEED_TOKEN (or FEED_CLIENT_SECRET with --client-id), name another variable with --secret-env, or pipe it with --secret-stdin',
      );
  const allowed = new Set<string>(['url', 'json', ...(FLAGS_OF[action ?? ''] ?? [])]);
  const stray = Object.keys(v).find((flag) => !allowed.has(flag));
  if (stray && action && action in FLAGS_OF) throw usage(`--${stray} does not go with feeds ${action}`);
  const common: Common = { ...(v.url !== undefined ? { url: v.url } : {}), json: v.json ?? false };
  const one = (what: string): string => {
    if (rest.length !== 1) throw usage(`Give the ${what}: feeds ${action} <${what.replace(' ', '')}>`);
    return rest[0];
  };
  switch (action) {
    case 'add': {
      if (rest.length > 0) throw usage(`Unexpected argument "${rest[0]}" (quote a name with spaces)`);
      if (!v.name) throw usage('Give the feed a name: --name "Acme MLS"');
      if (!v['service-root']) throw usage('Give the source: --service-root https://api.example.com/reso/odata');
      if (v['secret-env'] !== undefined && v['secret-stdin'])
        throw usage('Give either --secret-env or --secret-stdin, not both');
      const clientCredentials = v['client-id'] !== undefined || v['token-url'] !== undefined;
      if (clientCredentials && (!v['client-id'] || !v['token-url']))
        throw usage('Client credentials take both --client-id and --token-url');
      if (!clientCredentials && v.scope !== undefined) throw usage('--scope goes with --client-id and --token-url');
      const secret: SecretSource = v['secret-stdin']
        ? { from: 'stdin' }
        : { from: 'env', name: v['secret-env'] ?? (clientCredentials ? 'FEED_CLIENT_SECRET' : 'FEED_TOKEN') };
      const perSecond = number(v['requests-per-second'], 'requests-per-second');
      const perHour = number(v['requests-per-hour'], 'requests-per-hour');
      if (perHour !== undefined && perSecond === undefined)
        throw usage('--requests-per-hour goes with --requests-per-second');
      const quarantineRuns = number(v['quarantine-runs'], 'quarantine-runs');
      const maxRemovedPercent = number(v['max-removed-percent'], 'max-removed-percent');
      const everyMinutes = number(v['every-minutes'], 'every-minutes');
      const body = defined({
        name: v.name,
        serviceRoot: v['service-root'],
        originatingSystemName: v.source,
        filter: v.filter,
        pageSize: number(v['page-size'], 'page-size'),
        budget:
          perSecond === undefined ? undefined : defined({ requestsPerSecond: perSecond, requestsPerHour: perHour }),
        removals:
          quarantineRuns === undefined && maxRemovedPercent === undefined
            ? undefined
            : defined({ quarantineRuns, maxRemovedPercent }),
        schedule: everyMinutes === undefined ? undefined : { everyMinutes },
        media: v.media,
        enabled: v.disabled ? false : undefined,
        // The secret is filled in from `secret` when the command runs.
        auth: clientCredentials
          ? defined({ type: 'client_credentials', tokenUrl: v['token-url'], clientId: v['client-id'], scope: v.scope })
          : { type: 'bearer' },
      });
      return { ...common, action, body, secret };
    }
    case 'list':
      if (rest.length > 0) throw usage(`Unexpected argument "${rest[0]}"`);
      return { ...common, action };
    case 'show':
      return { ...common, action, feedId: one('feed id') };
    case 'runs':
      return { ...common, action, feedId: one('feed id') };
    case 'show-run':
      return { ...common, action, runId: one('run id') };
    case 'run':
      return {
        ...common,
        action,
        feedId: one('feed id'),
        dryRun: v['dry-run'] ?? false,
        reconcile: v.reconcile ?? false,
        follow: !v['no-follow'],
      };
    default:
      throw usage(
        action ? `Unknown command "feeds ${action}"` : 'Give a feeds command: add, list, show, run, runs, show-run',
      );
  }
}

/** The feed body with its secret in place: from the named variable, or the first line of standard input. */
export function withSecret(body: Record<string, unknown>, secret: string): Record<string, unknown> {
  const auth = body.auth as { type: string };
  return { ...body, auth: { ...auth, [auth.type === 'bearer' ? 'token' : 'clientSecret']: secret } };
}
