import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { composeEmbedded, loadConfig, type EmbeddedProduct } from '@estate/embedded';
import { buildDist, REPO_ROOT, ResoTestSource, type SourceRecord } from '@estate/testing';

const CLI = join(REPO_ROOT, 'dist', 'apps', 'cli', 'main.js');
const ADMIN = 'ek_cli_feeds_admin_0123456789abcdefgh';
// The token ResoTestSource accepts: it must never reach the CLI's output.
const SOURCE_TOKEN = 'source-token';

jest.setTimeout(180_000);

interface Ran {
  code: number;
  out: string;
  err: string;
}

/** The CLI as a process, with stdin given (or closed) and the environment it would have in a shell. */
function cli(args: string[], env: Record<string, string>, stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, 'feeds', ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 120_000 },
      (err, out, errOut) => resolve({ code: err ? Number(err.code ?? 1) : 0, out, err: errOut }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

const record = (n: number, price: number): SourceRecord => ({
  ListingKey: `CLI${n}`,
  ModificationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  StandardStatus: 'Active',
  PropertyType: 'Residential',
  ListPrice: price,
  UnparsedAddress: `${n} Elm St`,
  City: 'Austin',
  StateOrProvince: 'TX',
  PostalCode: '78701',
});

describe('npm run cli -- feeds', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let api: string;
  let source: ResoTestSource;
  let env: Record<string, string>;

  beforeAll(async () => {
    buildDist();
    dir = mkdtempSync(join(tmpdir(), 'cli-feeds-'));
    product = await composeEmbedded(
      {
        ...loadConfig({ DATA_DIR: dir, ADMIN_API_KEY: ADMIN, LOG_LEVEL: 'silent', FEEDS_ALLOW_PRIVATE_SOURCES: '1' }),
        port: 0,
      },
      pino({ level: 'silent' }),
    );
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
    source = await new ResoTestSource().start();
    source.put(record(1, 300_000), record(2, 310_000), record(3, -5));
    env = { DATA_DIR: dir, ESTATE_API_URL: api, ESTATE_API_KEY: ADMIN };
  });
  afterAll(async () => {
    await source?.close();
    await product?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const listings = async () => {
    const res = await fetch(`${api}/v1/listings?source=cli-mls&limit=100`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    return ((await res.json()) as { items: Array<{ externalId: string; pricing: { listPrice: number } }> }).items;
  };

  it('adds a feed with its token from FEED_TOKEN, runs it to its end and prints the ledger; a dry run writes nothing', async () => {
    const added = await cli(
      ['add', '--name', 'CLI MLS', '--service-root', source.url, '--source', 'cli-mls', '--requests-per-second', '50'],
      { ...env, FEED_TOKEN: SOURCE_TOKEN },
    );
    expect(added).toMatchObject({ code: 0, err: '' });
    const feedId = /^feed (fed_\S+)\s+CLI MLS/m.exec(added.out)![1];
    expect(added.out).toContain('auth        bearer token (stored encrypted)');
    expect(added.out).not.toContain(SOURCE_TOKEN);

    const listed = await cli(['list'], env);
    expect(listed.out).toMatch(new RegExp(`^${feedId}\\s+enabled\\s+on demand\\s+CLI MLS`, 'm'));
    const shown = await cli(['show', feedId, '--json'], env);
    expect(JSON.parse(shown.out)).toMatchObject({ id: feedId, auth: { type: 'bearer' }, cursor: null });
    expect(shown.out).not.toContain(SOURCE_TOKEN);

    // One record fails our validation (a negative price): the run is partially_failed and the CLI exits 1.
    const first = await cli(['run', feedId], env);
    expect(first.code).toBe(1);
    expect(first.out).toMatch(/^following job_\S+/m);
    expect(first.out).toMatch(/^run job_\S+\s+partially_failed\s+feed fed_/m);
    expect(first.out).toContain('fetched 3, created 2, updated 0, unchanged 0, failed 1');
    expect(first.out).toMatch(/error {7}#2 CLI3 validation_failed pricing\.listPrice: /);
    expect(first.out).toContain('-> 2026-01-01T00:00:03.000Z CLI3');
    expect((await listings()).map((l) => l.externalId).sort()).toEqual(['CLI1', 'CLI2']);

    source.put({ ...record(1, 299_000), ModificationTimestamp: '2026-01-01T00:01:00.000Z' }, record(3, 320_000));
    const dry = await cli(['run', feedId, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('(dry run: nothing written)');
    expect(dry.out).toContain(
      'cursor      2026-01-01T00:00:03.000Z CLI3 (not moved; a run would reach 2026-01-01T00:01:00.000Z CLI1)',
    );
    expect(dry.out).toMatch(/would {7}update CLI1 \(lst_\S+\): pricing/);
    expect(dry.out).toMatch(/would {7}create CLI3/);
    expect((await listings()).find((l) => l.externalId === 'CLI1')!.pricing.listPrice).toBe(300_000);

    const second = await cli(['run', feedId, '--reconcile', '--json'], env);
    expect(second.code).toBe(0);
    const run = JSON.parse(second.out) as { id: string; state: string; ledger: Record<string, unknown> };
    expect(run).toMatchObject({ state: 'succeeded', ledger: { created: 1, updated: 1, reconcile: true, keys: 3 } });
    expect((await listings()).map((l) => [l.externalId, l.pricing.listPrice]).sort()).toEqual([
      ['CLI1', 299_000],
      ['CLI2', 310_000],
      ['CLI3', 320_000],
    ]);

    const runs = await cli(['runs', feedId], env);
    expect(runs.code).toBe(0);
    expect(runs.out.trim().split('\n')).toHaveLength(3);
    expect(runs.out.split('\n')[0]).toMatch(new RegExp(`^${run.id}\\s+succeeded .*\\(reconcile\\)$`));
    expect(runs.out).toContain('(dry run)');
    const shownRun = await cli(['show-run', run.id], env);
    expect(shownRun).toMatchObject({ code: 0 });
    expect(shownRun.out).toContain('keys 3, quarantined 0, hidden by the source 0, restored 0, removed 0');
  });

  it('takes the client secret from stdin, and without ESTATE_API_KEY works with a key of its own it revokes', async () => {
    const { ESTATE_API_KEY: _key, ...keyless } = env;
    const added = await cli(
      [
        'add',
        '--name',
        'Piped',
        '--service-root',
        source.url,
        '--client-id',
        'cid',
        '--token-url',
        `${source.url}/token`,
        '--secret-stdin',
        '--json',
      ],
      keyless,
      'piped-client-secret\n',
    );
    expect(added.code).toBe(0);
    const feed = JSON.parse(added.out) as { id: string; auth: Record<string, unknown> };
    expect(feed.auth).toEqual({ type: 'client_credentials', clientId: 'cid', tokenUrl: `${source.url}/token` });
    expect(added.out).not.toContain('piped-client-secret');
    const keys = await new Promise<string>((resolve) =>
      execFile(
        process.execPath,
        [CLI, 'keys', 'list'],
        { env: { PATH: process.env.PATH ?? '', DATA_DIR: dir } },
        (_e, o) => resolve(o),
      ),
    );
    expect(keys).not.toContain('cli feeds');
  });

  it('prints problems readably and exits 1; a missing secret is named, not asked for', async () => {
    const refused = await cli(['add', '--name', 'Bad', '--service-root', 'ftp://example.com/odata'], {
      ...env,
      FEED_TOKEN: SOURCE_TOKEN,
    });
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^422 validation_failed: /m);
    expect(refused.err).toMatch(/^ {2}serviceRoot: must be an https URL$/m);
    expect(refused.err).toMatch(/^ {2}request id \S+$/m);

    const unknown = await cli(['run', 'fed_nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/^404 feed_not_found: /m);

    const noSecret = await cli(['add', '--name', 'X', '--service-root', source.url], env);
    expect(noSecret.code).toBe(1);
    expect(noSecret.err).toMatch(/Set FEED_TOKEN to the feed's bearer token/);

    // A port that was free a moment ago: nothing answers there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const away = await cli(['list'], { ...env, ESTATE_API_URL: `http://127.0.0.1:${port}` });
    expect(away.code).toBe(1);
    expect(away.err).toContain(`Could not reach the API at http://127.0.0.1:${port}: ECONNREFUSED`);
  });
});
