import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeEmbedded } from '@estate/embedded';
import pino from 'pino';
import { buildDist, REPO_ROOT } from '@estate/testing';

const ROOT = REPO_ROOT;
const log = pino({ level: 'silent' });

function cli(dataDir: string, ...args: string[]) {
  const res = spawnSync(process.execPath, [join(ROOT, 'dist', 'apps', 'cli', 'main.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

const secretIn = (text: string) => /secret \(shown once\): (ek_\S+)/.exec(text)?.[1];

// Each command is a fresh Node process: on a busy machine a few of them take longer than the default limit.
jest.setTimeout(180_000);

describe('CLI (offline, on the data folder)', () => {
  let dir: string;
  beforeAll(() => buildDist());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates an account whose admin key the server then accepts, and manages its keys', async () => {
    const created = cli(dir, 'accounts', 'create', 'Acme', 'Realty');
    expect(created.code).toBe(0);
    const accountId = /account (acc_\S+)\s+Acme Realty/.exec(created.out)?.[1];
    const adminSecret = secretIn(created.out);
    expect(accountId).toBeDefined();

    const feed = cli(dir, 'keys', 'create', '--role', 'integration', '--name', 'MLS feed', '--account', accountId!);
    expect(feed.code).toBe(0);
    const feedSecret = secretIn(feed.out)!;
    const feedId = /key (key_\S+)/.exec(feed.out)![1];
    const listed = cli(dir, 'keys', 'list', '--account', accountId!);
    expect(listed.out).toContain(feedId);
    expect(listed.out).not.toContain(feedSecret);

    expect(cli(dir, 'keys', 'create', '--role', 'agent', '--name', 'x', '--account', accountId!)).toMatchObject({
      code: 1,
      err: expect.stringContaining('--agent-id'),
    });

    const product = await composeEmbedded(
      { port: 0, host: '127.0.0.1', dataDir: dir, rateLimitPerMinute: 100, logLevel: 'silent' },
      log,
    );
    try {
      const get = (key: string) =>
        product.app.inject({ method: 'GET', url: '/v1/listings', headers: { authorization: `Bearer ${key}` } });
      expect((await get(adminSecret!)).statusCode).toBe(200);
      expect((await get(feedSecret)).statusCode).toBe(200);
    } finally {
      await product.close();
    }

    expect(cli(dir, 'keys', 'revoke', feedId, '--account', accountId!).code).toBe(0);
    const again = await composeEmbedded(
      { port: 0, host: '127.0.0.1', dataDir: dir, rateLimitPerMinute: 100, logLevel: 'silent' },
      log,
    );
    try {
      expect(
        (
          await again.app.inject({
            method: 'GET',
            url: '/v1/listings',
            headers: { authorization: `Bearer ${feedSecret}` },
          })
        ).statusCode,
      ).toBe(401);
    } finally {
      await again.close();
    }
  });

  it('says what to do when there is no default account yet, and refuses unknown commands', () => {
    expect(cli(dir, 'keys', 'list')).toMatchObject({ code: 1, err: expect.stringContaining('no default account yet') });
    expect(cli(dir, 'frobnicate')).toMatchObject({ code: 2, err: expect.stringContaining('Usage') });
  });

  it('works on the data folder while the server runs on it: keys made by either side work on the other', async () => {
    const product = await composeEmbedded(
      {
        port: 0,
        host: '127.0.0.1',
        dataDir: dir,
        adminApiKey: 'ek_cli_admin_key_0123456789abcdefghijk',
        rateLimitPerMinute: 100,
        logLevel: 'silent',
      },
      log,
    );
    try {
      const listed = cli(dir, 'keys', 'list');
      expect(listed).toMatchObject({ code: 0, err: '' });
      expect(listed.out).toContain('ADMIN_API_KEY');
      const made = cli(dir, 'keys', 'create', '--role', 'integration', '--name', 'beside the server');
      expect(made.code).toBe(0);
      const secret = secretIn(made.out)!;
      const get = (key: string) =>
        product.app.inject({ method: 'GET', url: '/v1/listings', headers: { authorization: `Bearer ${key}` } });
      expect((await get(secret)).statusCode).toBe(200);
      const keyId = /key (key_\S+)/.exec(made.out)![1];
      expect(cli(dir, 'keys', 'revoke', keyId).code).toBe(0);
      expect((await get(secret)).statusCode).toBe(401);
    } finally {
      await product.close();
    }
  });

  it('makes agent keys only for an active agent of the account, and lists and revokes platform keys', async () => {
    const ADMIN = 'ek_cli_admin_key_0123456789abcdefghijk';
    const PLATFORM = 'ek_cli_platform_key_0123456789abcdefgh';
    const product = await composeEmbedded(
      {
        port: 0,
        host: '127.0.0.1',
        dataDir: dir,
        adminApiKey: ADMIN,
        platformApiKey: PLATFORM,
        rateLimitPerMinute: 1000,
        logLevel: 'silent',
      },
      log,
    );
    const call = (key: string, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
      product.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } });
    try {
      const ours = (await call(ADMIN, 'POST', '/v1/agents', { name: 'Ana', email: 'ana@example.com' })).json();
      const other = (await call(PLATFORM, 'POST', '/v1/accounts', { name: 'Other' })).json();
      const theirs = (
        await call(other.adminKey.secret, 'POST', '/v1/agents', { name: 'Bo', email: 'bo@example.com' })
      ).json();
      const agentKey = (agentId: string) =>
        cli(dir, 'keys', 'create', '--role', 'agent', '--name', 'a', '--agent-id', agentId);

      for (const agentId of [theirs.id, 'agt_unknown']) {
        expect(agentKey(agentId)).toMatchObject({
          code: 1,
          err: expect.stringContaining('not an agent of this account'),
        });
      }
      const made = agentKey(ours.id);
      expect(made.code).toBe(0);
      expect((await call(secretIn(made.out)!, 'GET', '/v1/leads')).statusCode).toBe(200);
      expect(cli(dir, 'keys', 'list').out).not.toContain(theirs.id);

      await call(ADMIN, 'PATCH', `/v1/agents/${ours.id}`, { active: false });
      expect((await call(secretIn(made.out)!, 'GET', '/v1/leads')).statusCode).toBe(401);
      expect(agentKey(ours.id)).toMatchObject({ code: 1, err: expect.stringContaining('inactive agent') });

      const platform = cli(dir, 'keys', 'list', '--platform');
      expect(platform).toMatchObject({ code: 0, err: '' });
      const platformKeyId = /(key_\S+)\s+platform\s.*PLATFORM_API_KEY/.exec(platform.out)?.[1];
      expect(platformKeyId).toBeDefined();
      expect(cli(dir, 'keys', 'list').out).not.toContain(platformKeyId);
      expect(cli(dir, 'keys', 'revoke', platformKeyId!).code).toBe(1);
      expect((await call(PLATFORM, 'POST', '/v1/accounts', { name: 'Still' })).statusCode).toBe(201);
      expect(cli(dir, 'keys', 'revoke', platformKeyId!, '--platform').code).toBe(0);
      expect((await call(PLATFORM, 'POST', '/v1/accounts', { name: 'Too late' })).statusCode).toBe(401);
      expect(cli(dir, 'keys', 'list', '--platform').out).not.toContain(platformKeyId);
    } finally {
      await product.close();
    }
  });
});
