import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { composeEmbedded, loadConfig, type EmbeddedProduct } from '@estate/embedded';
import { buildDist, eventually, REPO_ROOT, WebhookReceiver } from '@estate/testing';

const CLI = join(REPO_ROOT, 'dist', 'apps', 'cli', 'main.js');
const ADMIN = 'ek_cli_listen_admin_0123456789abcdefgh';

jest.setTimeout(120_000);

describe('npm run cli -- webhooks listen', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let api: string;
  let receiver: WebhookReceiver;
  let listener: ChildProcess | undefined;

  beforeAll(async () => {
    buildDist();
    dir = mkdtempSync(join(tmpdir(), 'cli-listen-'));
    // The product as `npm start` runs it: private targets are not allowed.
    product = await composeEmbedded(
      { ...loadConfig({ DATA_DIR: dir, ADMIN_API_KEY: ADMIN, LOG_LEVEL: 'silent' }), port: 0 },
      pino({ level: 'silent' }),
    );
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    listener?.kill();
    await receiver?.stop();
    await product?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const createListing = async (externalId: string) => {
    const response = await fetch(`${api}/v1/listings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        externalId,
        source: 'laptop',
        pricing: { listPrice: 250000 },
        propertyDetails: { propertyType: 'residential' },
        location: { address: { street: '2 Elm St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701' } },
      }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  };

  it('forwards each new event to the local URL, signed with the secret it prints, and revokes its key at the end', async () => {
    const before = await createListing('BEFORE-LISTEN');
    let output = '';
    listener = spawn(
      process.execPath,
      [CLI, 'webhooks', 'listen', '--forward-to', receiver.url('laptop'), '--url', api],
      { env: { PATH: process.env.PATH ?? '', DATA_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    listener.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    listener.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    const secret = await eventually(() => {
      expect(output).toContain('Ready: forwarding new events');
      return /signing secret is (whsec_\S+)/.exec(output)![1];
    });
    receiver.secret('laptop', secret);

    const after = await createListing('AFTER-LISTEN');
    const [delivery] = await eventually(
      () => {
        const verified = receiver.verified('laptop');
        expect(verified.length).toBeGreaterThan(0);
        return verified;
      },
      { timeoutMs: 20_000 },
    );
    // Verified by the standardwebhooks package against the printed secret; history before the start is not sent.
    expect(delivery.event).toMatchObject({ type: 'listing.created', data: { id: after } });
    expect(delivery.headers['webhook-id']).toBe(delivery.event!.id);
    expect(receiver.unverified()).toEqual([]);
    expect(receiver.deliveries.some((d) => d.body.includes(before))).toBe(false);
    await eventually(() => expect(output).toMatch(/--> listing\.created evt_\S+ {2}\[200\]/));

    const exited = new Promise((resolve) => listener!.once('exit', resolve));
    listener.kill('SIGTERM');
    expect(await exited).toBe(0);
    const keys = await promisify(execFile)(process.execPath, [CLI, 'keys', 'list'], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dir },
    });
    expect(keys.stdout).not.toContain('webhooks listen');
    listener = undefined;
  });

  it('stops with the feed error when its key is refused, instead of polling on', async () => {
    const run = await promisify(execFile)(
      process.execPath,
      [
        CLI,
        'webhooks',
        'listen',
        '--forward-to',
        receiver.url('laptop'),
        '--url',
        api,
        '--key',
        'ek_not_a_key_0123456789abcdef',
      ],
      { env: { PATH: process.env.PATH ?? '', DATA_DIR: dir } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/The change feed answered 401/);
  });

  it('names the API it cannot reach, and how to name another', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const nowhere = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const run = await promisify(execFile)(
      process.execPath,
      [CLI, 'webhooks', 'listen', '--forward-to', receiver.url('laptop'), '--url', nowhere, '--key', ADMIN],
      { env: { PATH: process.env.PATH ?? '', DATA_DIR: dir } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`Cannot reach the API at ${nowhere} (ECONNREFUSED)`);
    expect(run.stderr).toContain('--url');
  });
});
