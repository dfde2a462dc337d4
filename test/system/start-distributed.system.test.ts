import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, describeWithEngines, eventually, fixedPort, listingBody, REPO_ROOT } from '@estate/testing';
import { apiClient, dropRun } from './harness';

const SERVICES = ['gateway', 'listings', 'media', 'leads', 'webhooks'] as const;
const MINUTES = 60_000;

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** A port with the four after it free too (the script gives the gateway's port, then one per service). */
async function fivePorts(): Promise<number> {
  for (;;) {
    const port = await fixedPort();
    const rest = await Promise.all([1, 2, 3, 4].map((k) => bindable(port + k)));
    if (rest.every(Boolean)) return port;
  }
}

/** What `npm run <name>` hands to `sh -c`. */
function npmScript(name: string): string {
  const { scripts } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return scripts[name];
}

/** `npm run start:distributed` as a user runs it: the five processes on the engines, stopped by one signal. */
describeWithEngines(
  'scripts/start-distributed.sh (the distributed profile on this machine)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    const run = `sysstart${randomBytes(4).toString('hex')}`;
    const state = mkdtempSync(join(tmpdir(), 'estate-start-distributed-'));
    const admin = `ek_${run}_admin_${randomBytes(16).toString('hex')}`;
    let port = 0;
    let script: ChildProcess | undefined;
    let output = '';

    const start = async () => {
      output = '';
      // As npm runs it: `sh -c` with the package's script, so that a SIGTERM npm passes on reaches the processes.
      script = spawn('sh', ['-c', npmScript('start:distributed')], {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          ...urls,
          SKIP_BUILD: '1',
          PORT: String(port),
          DISTRIBUTED_STATE_DIR: state,
          MONGODB_DATABASE_PREFIX: run,
          NATS_NAMESPACE: run,
          ELASTICSEARCH_INDEX: `${run}-listings`,
          ADMIN_API_KEY: admin,
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      script.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      script.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await eventually(
        async () => {
          if (script!.exitCode !== null) throw new Error(`the script exited: ${output.slice(-3000)}`);
          expect(output).toContain(`start-distributed: ready on http://127.0.0.1:${port}`);
        },
        { timeoutMs: 3 * MINUTES, intervalMs: 200 },
      );
    };
    /** SIGTERM to the script; resolves with its exit code once it and every process it started are gone. */
    const stop = async (): Promise<number | null> => {
      const child = script!;
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))),
      );
      child.kill('SIGTERM');
      const code = await exited;
      await eventually(
        async () => {
          for (let k = 0; k <= 4; k++)
            expect({ port: port + k, free: await bindable(port + k) }).toEqual({ port: port + k, free: true });
        },
        { timeoutMs: MINUTES, intervalMs: 100 },
      );
      return code;
    };

    beforeAll(async () => {
      buildDist();
      port = await fivePorts();
    }, 5 * MINUTES);

    afterAll(async () => {
      if (script && script.exitCode === null) await stop();
      await dropRun(urls, { databases: SERVICES.map((s) => `${run}_${s}`), searchIndex: run, namespace: run });
      rmSync(state, { recursive: true, force: true });
    }, 2 * MINUTES);

    it(
      'starts the five processes on the engines, serves the API through the gateway, stops them all on SIGTERM, and keeps data and secret across a restart',
      async () => {
        await start();
        const api = apiClient(`http://127.0.0.1:${port}`, admin);
        const created = await api('POST', '/v1/listings', listingBody());
        expect(created.status).toBe(201);
        // Each service listens on its own port (the gateway's, then the four after it).
        for (let k = 1; k <= 4; k++) expect(await bindable(port + k)).toBe(false);
        const secret = readFileSync(join(state, 'internal-signing-secret'), 'utf8');
        expect(secret.length).toBeGreaterThanOrEqual(32);
        expect(await stop()).toBe(143);

        await start();
        expect(readFileSync(join(state, 'internal-signing-secret'), 'utf8')).toBe(secret);
        const again = await apiClient(`http://127.0.0.1:${port}`, admin)('GET', `/v1/listings/${created.body.id}`);
        expect(again).toMatchObject({ status: 200, body: { id: created.body.id, version: 1 } });
        await stop();
      },
      10 * MINUTES,
    );

    it('refuses to start without the engines, saying what to do', async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, SKIP_BUILD: '1' };
      delete env.MONGODB_URL;
      const child = spawn('bash', [join(REPO_ROOT, 'scripts', 'start-distributed.sh')], { cwd: REPO_ROOT, env });
      let err = '';
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect({ code, err }).toEqual({ code: 2, err: expect.stringContaining('MONGODB_URL is not set') });
    });
  },
);
