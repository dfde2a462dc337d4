import { createEstateClient, EstateApiError, unwrap, type EstateClient, type Schemas } from '@estate/client';
import { AppError } from '@estate/platform/errors';
import { withSecret, type FeedsCommand } from './feeds-args';

type Feed = Schemas['Feed'];
type Job = Schemas['Job'];
type Ledger = Schemas['FeedLedger'];

export interface FeedsIo {
  print(line: string): void;
  error(line: string): void;
  /** Standard input, read whole (for --secret-stdin). */
  readStdin(): Promise<string>;
  env: NodeJS.ProcessEnv;
}

const FINAL = new Set(['succeeded', 'partially_failed', 'failed']);
const n = (value: number) => value.toLocaleString('en-US');

const cursorText = (c: Ledger['cursorAfter']) => (c ? `${c.modificationTimestamp} ${c.listingKey}` : '(start)');

/** One line per feed, for `feeds list`. */
export function feedRow(f: Feed): string {
  const schedule = f.schedule ? `every ${f.schedule.everyMinutes} min` : 'on demand';
  return `${f.id}  ${f.enabled ? 'enabled ' : 'disabled'}  ${schedule.padEnd(16)} ${f.name}  <- ${f.serviceRoot}`;
}

/** A feed as `feeds show` and `feeds add` print it (the secret is never in the API's answer). */
export function feedText(f: Feed): string[] {
  const auth =
    f.auth.type === 'bearer'
      ? 'bearer token (stored encrypted)'
      : `client credentials ${f.auth.clientId} at ${f.auth.tokenUrl}${f.auth.scope ? ` scope ${f.auth.scope}` : ''} (secret stored encrypted)`;
  return [
    `feed ${f.id}  ${f.name}${f.enabled ? '' : '  (disabled)'}`,
    `  source      ${f.serviceRoot} (${f.resource})${f.filter ? ` filter ${f.filter}` : ''}`,
    `  auth        ${auth}`,
    `  listings    source "${f.originatingSystemName}"${f.media ? ', with photos' : ''}`,
    `  budget      ${f.budget.requestsPerSecond}/s${f.budget.requestsPerHour ? `, ${f.budget.requestsPerHour}/h` : ''}, pages of ${f.pageSize}`,
    `  removals    quarantined, deleted after ${f.removals.quarantineRuns} key pulls; at most ${f.removals.maxRemovedPercent}% at once`,
    `  schedule    ${f.schedule ? `every ${f.schedule.everyMinutes} min, next ${f.nextRunAt ?? '-'}` : 'none (runs on demand)'}`,
    `  cursor      ${cursorText(f.cursor)}`,
    `  reconciled  ${f.reconciledAt ?? 'never'}`,
    `  last run    ${f.lastRunId ?? '-'}`,
  ];
}

/** One line per run, for `feeds runs`. */
export function runRow(j: Job): string {
  const l = j.ledger;
  const counts = l
    ? `fetched ${n(l.fetched)}, created ${n(l.created)}, updated ${n(l.updated)}, unchanged ${n(l.unchanged)}, failed ${n(l.failed)}`
    : '';
  const kind = [l?.dryRun ? 'dry run' : '', l?.reconcile ? 'reconcile' : ''].filter(Boolean).join(', ');
  return `${j.id}  ${j.state.padEnd(16)} ${j.createdAt}  ${counts}${kind ? `  (${kind})` : ''}`;
}

/** A run and its ledger, for `feeds run` once it ends and `feeds show-run`. */
export function runText(j: Job): string[] {
  const l = j.ledger;
  const head = `run ${j.id}  ${j.state}${j.feedId ? `  feed ${j.feedId}` : ''}`;
  if (!l) return [head, `  created ${j.createdAt}`];
  const took = l.durationMs === null ? 'running' : `${(l.durationMs / 1000).toFixed(1)} s`;
  const lines = [
    `${head}  ${took}${l.dryRun ? '  (dry run: nothing written)' : ''}`,
    `  records     fetched ${n(l.fetched)}, created ${n(l.created)}, updated ${n(l.updated)}, unchanged ${n(l.unchanged)}, failed ${n(l.failed)}`,
    `  removals    ${l.reconcile ? `keys ${l.keys === null ? 'none (no complete key pull)' : n(l.keys)}, ` : 'no key pull, '}${l.entityEvents === null ? '' : `entity events ${n(l.entityEvents)}, `}quarantined ${n(l.quarantined)}, hidden by the source ${n(l.hidden)}, restored ${n(l.restored)}, removed ${n(l.removed)}`,
    `  photos      downloaded ${n(l.mediaDownloaded)}, unchanged ${n(l.mediaUnchanged)}, uploaded ${n(l.mediaUploaded)}, removed ${n(l.mediaRemoved)}, failed ${n(l.mediaFailed)}`,
    `  source      requests ${n(l.requests)}, retries ${n(l.retries)}, restarts ${n(l.restarts)}, lag ${l.lagSeconds === null ? '-' : `${Math.round(l.lagSeconds)} s`}`,
    l.dryRun
      ? `  cursor      ${cursorText(l.cursorBefore)} (not moved; a run would reach ${cursorText(l.cursorAfter)})`
      : `  cursor      ${cursorText(l.cursorBefore)} -> ${cursorText(l.cursorAfter)}`,
  ];
  if (l.stopReason) lines.push(`  stopped     ${l.stopReason}`);
  for (const e of j.errors.slice(0, 20))
    lines.push(
      `  error       #${e.index}${e.externalId ? ` ${e.externalId}` : ''} ${e.code}${e.path ? ` ${e.path}` : ''}: ${e.message}`,
    );
  if (j.errors.length > 20) lines.push(`  ...         ${n(j.errors.length - 20)} more errors (--json lists them)`);
  for (const p of (l.preview ?? []).slice(0, 20))
    lines.push(
      `  would       ${p.action} ${p.listingKey}${p.listingId ? ` (${p.listingId})` : ''}${p.fields.length ? `: ${p.fields.join(', ')}` : ''}`,
    );
  if ((l.preview?.length ?? 0) > 20) lines.push(`  ...         more in the preview (--json lists them)`);
  return lines;
}

/** A problem+json answer, readably: status, code, detail, each bad field, the request id to quote. */
export function problemText(err: EstateApiError): string[] {
  return [
    `${err.status} ${err.code ?? 'error'}: ${err.detail ?? err.message}`,
    ...err.errors.map((e) => `  ${e.path || '(body)'}: ${e.message}`),
    ...(err.requestId ? [`  request id ${err.requestId}`] : []),
  ];
}

async function secretOf(command: Extract<FeedsCommand, { action: 'add' }>, io: FeedsIo): Promise<string> {
  if (command.secret.from === 'stdin') {
    const secret = (await io.readStdin()).split(/\r?\n/)[0].trim();
    if (!secret) throw new AppError('validation_failed', '--secret-stdin read no secret from standard input');
    return secret;
  }
  const secret = io.env[command.secret.name]?.trim();
  if (!secret)
    throw new AppError(
      'validation_failed',
      `Set ${command.secret.name} to the feed's ${command.body.auth && (command.body.auth as { type: string }).type === 'bearer' ? 'bearer token' : 'client secret'} (or pipe it with --secret-stdin)`,
    );
  return secret;
}

/** Follows a run to its end on its event stream, one line per page, and answers the run as it ended. */
async function follow(client: EstateClient, runId: string, io: FeedsIo): Promise<Job> {
  io.print(`following ${runId} (Ctrl-C stops following; the run goes on)`);
  for await (const event of client.followJob(runId)) {
    if (FINAL.has(event.state)) break;
    io.print(
      `  ${event.state}  ${n(event.progress.processed)} records, ${n(event.progress.succeeded)} applied, ${n(event.progress.failed)} failed`,
    );
  }
  return unwrap(await client.GET('/v1/jobs/{id}', { params: { path: { id: runId } } })) as Job;
}

const exitOf = (j: Job) => (j.state === 'succeeded' ? 0 : 1);

/** Runs a `feeds` command against the API; answers the exit code. API errors are printed and exit 1. */
export async function runFeedsCommand(
  command: FeedsCommand,
  api: { url: string; key: string },
  io: FeedsIo,
): Promise<number> {
  const client = createEstateClient({ baseUrl: api.url, apiKey: api.key });
  const out = (value: unknown, text: () => string[]) => {
    if (command.json) io.print(JSON.stringify(value, null, 2));
    else for (const line of text()) io.print(line);
  };
  try {
    switch (command.action) {
      case 'add': {
        const body = withSecret(command.body, await secretOf(command, io));
        const created = unwrap(await client.POST('/v1/feeds', { body: body as never }));
        out(created, () => feedText(created));
        return 0;
      }
      case 'list': {
        const feeds: Feed[] = [];
        for await (const f of client.list('/v1/feeds')) feeds.push(f);
        out(feeds, () => (feeds.length ? feeds.map(feedRow) : ['no feeds yet']));
        return 0;
      }
      case 'show': {
        const f = unwrap(await client.GET('/v1/feeds/{id}', { params: { path: { id: command.feedId } } }));
        out(f, () => feedText(f));
        return 0;
      }
      case 'runs': {
        const page = unwrap(
          await client.GET('/v1/feeds/{id}/runs', { params: { path: { id: command.feedId }, query: { limit: 20 } } }),
        );
        out(page.items, () => (page.items.length ? page.items.map((j) => runRow(j as Job)) : ['no runs yet']));
        return 0;
      }
      case 'show-run': {
        const j = unwrap(await client.GET('/v1/jobs/{id}', { params: { path: { id: command.runId } } })) as Job;
        out(j, () => runText(j));
        return FINAL.has(j.state) ? exitOf(j) : 0;
      }
      case 'run': {
        const started = unwrap(
          await client.POST('/v1/feeds/{id}/runs', {
            params: {
              path: { id: command.feedId },
              query: { dryRun: command.dryRun ? 'true' : 'false', reconcile: command.reconcile ? 'true' : 'false' },
            },
          }),
        ) as Job;
        if (!command.follow) {
          out(started, () => [`run ${started.id} ${started.state}: feeds show-run ${started.id} follows it up`]);
          return 0;
        }
        if (!command.json) io.print(`run ${started.id} of ${command.feedId} ${started.state}`);
        const ended = await follow(client, started.id, command.json ? { ...io, print: () => {} } : io);
        out(ended, () => runText(ended));
        return exitOf(ended);
      }
    }
  } catch (err) {
    if (err instanceof EstateApiError) {
      for (const line of problemText(err)) io.error(line);
      return 1;
    }
    // fetch's own failure names the reason only in its cause (ECONNREFUSED and the like).
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (err instanceof TypeError && cause) {
      io.error(`Could not reach the API at ${api.url}: ${cause.code ?? cause.message ?? err.message}`);
      return 1;
    }
    throw err;
  }
}
