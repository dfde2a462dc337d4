import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  describeWithEngines,
  eventually,
  fixedPort,
  listingBody,
  natsServiceCredentials,
  REPO_ROOT,
  startOnSamePort,
} from '@estate/testing';
import { apiClient, startCluster, type Api, type Cluster } from './harness';

/** How long the bus is away. */
const OUTAGE_MS = 10_000;
const WORKERS = 3;

/** The users of scripts/engines/nats-users.conf with the passwords of the environment, when all are set. */
function natsUsers(): Record<string, string> | undefined {
  const services = ['gateway', 'listings', 'media', 'leads', 'webhooks'].map((s) => natsServiceCredentials(s));
  if (!process.env.NATS_USER || !process.env.NATS_PASSWORD || services.some((c) => !c)) return undefined;
  // nats-server reads a variable's value as configuration: quoted, a password is always a string.
  return Object.fromEntries([
    ['NATS_PASSWORD_TOOLS', `"${process.env.NATS_PASSWORD}"`],
    ...services.map((c) => [`NATS_PASSWORD_${c!.NATS_USER.toUpperCase()}`, `"${c!.NATS_PASSWORD}"`]),
  ]);
}

/**
 * A NATS server of the test's own (JetStream in its own folder), which the test may stop and start again; with
 * the engines' users and passwords when they are set, so that reconnecting after the outage authenticates.
 */
async function privateNats() {
  // Its clients are given the address once, and it comes back on it after the outage.
  const port = await fixedPort();
  const dir = mkdtempSync(join(tmpdir(), 'estate-fault-nats-'));
  const users = natsUsers();
  let child: ChildProcess | undefined;
  let output = '';
  const auth = users
    ? `${encodeURIComponent(process.env.NATS_USER!)}:${encodeURIComponent(process.env.NATS_PASSWORD!)}@`
    : '';
  return {
    url: `nats://${auth}127.0.0.1:${port}`,
    async start() {
      if (child && child.exitCode === null && child.signalCode === null) return;
      const config = users ? ['-c', join(REPO_ROOT, 'scripts', 'engines', 'nats-users.conf')] : [];
      await startOnSamePort(async () => {
        output = '';
        const c = spawn('nats-server', [...config, '-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { PATH: process.env.PATH ?? '', ...users },
        });
        child = c;
        c.stdout!.on('data', (d: Buffer) => (output += d.toString()));
        c.stderr!.on('data', (d: Buffer) => (output += d.toString()));
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`nats-server not ready after 30 s:\n${output}`)), 30_000);
          const ready = () => {
            if (!output.includes('Server is ready')) return;
            clearTimeout(timer);
            resolve();
          };
          c.stdout!.on('data', ready);
          c.stderr!.on('data', ready);
          // A server that could not bind its port exits, its output saying why (address already in use).
          c.once('close', () => {
            clearTimeout(timer);
            reject(new Error(`nats-server exited:\n${output}`));
          });
        });
      });
    },
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      output = '';
      c.kill('SIGTERM');
      await exited;
    },
    async destroy() {
      await this.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Tier 3: NATS goes away for 10 s while clients create listings. Writes do not need the bus (each change and
 * its event are one store write; the outbox publishes later), so every one is acknowledged; once the bus is
 * back the events go out and every acknowledged listing becomes searchable, once.
 */
describeWithEngines(
  'bus outage (separate processes, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let nats: Awaited<ReturnType<typeof privateNats>>;
    let cluster: Cluster | undefined;
    let api: Api;

    beforeAll(async () => {
      nats = await privateNats();
      await nats.start();
      cluster = await startCluster({
        name: 'sysfaultbus',
        engines: { ...urls, NATS_URL: nats.url },
        replicas: { listings: 1, media: 0, leads: 0 },
        keys: { platform: false },
      });
      api = apiClient(cluster.gateway, cluster.keys.admin);
    }, 180_000);

    afterAll(async () => {
      // The bus must be up for the cluster's cleanup (its streams are dropped).
      await nats?.start().catch(() => undefined);
      await cluster?.stop();
      await nats?.destroy();
    }, 120_000);

    it('acknowledges every write while the bus is away, and indexes each one once it is back', async () => {
      const source = `faults-bus-${cluster!.run}`;
      const acknowledged: string[] = [];
      const other: string[] = [];
      let slowestMs = 0;
      let n = 0;
      let running = true;
      const worker = async () => {
        while (running) {
          const started = Date.now();
          const res = await api('POST', '/v1/listings', listingBody({ externalId: `B-${n++}`, source }));
          slowestMs = Math.max(slowestMs, Date.now() - started);
          if (res.status === 201) acknowledged.push(res.body.id);
          else other.push(`${res.status} ${res.body?.code ?? ''}`);
          await sleep(50);
        }
      };
      const workers = Array.from({ length: WORKERS }, worker);
      // Writes made before, during and after the outage (of OUTAGE_MS at least).
      const moreWrites = async () => {
        const from = acknowledged.length + other.length;
        await eventually(() => expect(acknowledged.length + other.length).toBeGreaterThan(from), { timeoutMs: 30_000 });
      };
      await moreWrites();
      await nats.stop();
      const outageStarted = Date.now();
      await moreWrites();
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStarted)));
      await moreWrites();
      const beforeRestart = acknowledged.length;
      await nats.start();
      await moreWrites();
      running = false;
      await Promise.all(workers);
      process.stdout.write(
        `bus outage: ${JSON.stringify({ acknowledged: acknowledged.length, beforeRestart, other, slowestMs })}\n`,
      );

      expect(other).toEqual([]);
      expect(acknowledged.length).toBeGreaterThan(0);
      // Every acknowledged listing reaches the search index (through its event), and each exactly once.
      await eventually(
        async () => {
          const page = await api('GET', `/v1/listings?source=${source}&limit=100`);
          expect(page.body.total).toBe(acknowledged.length);
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { items: { id: string }[]; nextCursor: string | null } } = await api(
          'GET',
          `/v1/listings?source=${source}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        seen.push(...page.body.items.map((l) => l.id));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(seen.sort()).toEqual([...acknowledged].sort());
    }, 300_000);
  },
);
