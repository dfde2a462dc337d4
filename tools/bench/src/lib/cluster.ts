import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { ServerSample } from './protocol';
import type { ScenarioContext } from './scenario';
import type { ServerHandle } from './servers';

export interface Engines {
  mongodb: string;
  nats: string;
  elasticsearch: string;
}

/** The engines in the environment, or undefined when one is missing. */
export function enginesFromEnv(env: NodeJS.ProcessEnv = process.env): Engines | undefined {
  const { MONGODB_URL: mongodb, NATS_URL: nats, ELASTICSEARCH_URL: elasticsearch } = env;
  return mongodb && nats && elasticsearch ? { mongodb, nats, elasticsearch } : undefined;
}

export interface DistributedCluster {
  origin: string;
  auth: Record<string, string>;
  /** The gateway process, measurable like a forked bench server (CPU and RSS from /proc). */
  gateway: ServerHandle;
  processes: ServerHandle[];
  /** The MongoDB database a service of this cluster keeps its documents in. */
  database(service: 'gateway' | (typeof SERVICES)[number]): string;
  stop(): Promise<void>;
}

const SERVICES = ['listings', 'media', 'leads', 'webhooks'] as const;
/** Linux clock ticks per second (USER_HZ), what /proc/<pid>/stat counts CPU in. */
const TICKS_PER_SECOND = 100;

/** A port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => done(port));
    });
    srv.on('error', fail);
  });
}

/** CPU and RSS of a process we did not fork with IPC, from /proc (no heap or event-loop readings). */
function procSample(pid: number): ServerSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const micros = (ticks: string) => (Number(ticks) / TICKS_PER_SECOND) * 1e6;
  return {
    rssBytes: Number(fields[21]) * 4096,
    heapUsedBytes: 0,
    cpuUserMicros: micros(fields[11]),
    cpuSystemMicros: micros(fields[12]),
    eventLoopDelay: { meanMs: 0, p99Ms: 0, maxMs: 0 },
  };
}

/** A service process's own NATS user (`NATS_PASSWORD_<SERVICE>` from scripts/engines/up.sh), when the server requires users. */
export function natsUserEnv(service: string): Record<string, string> {
  const password = process.env[`NATS_PASSWORD_${service.toUpperCase()}`];
  return password ? { NATS_USER: service, NATS_PASSWORD: password } : {};
}

/** The bench's own NATS user (`NATS_USER` / `NATS_PASSWORD`, the tools user) for its clean-up connection. */
export const natsToolsAuth = (): { user?: string; pass?: string } =>
  process.env.NATS_USER ? { user: process.env.NATS_USER, pass: process.env.NATS_PASSWORD } : {};

/**
 * The whole distributed profile from `dist/`: listings, media, leads and the gateway as processes
 * on the engines given, with databases, a NATS namespace and a search index of their own that are
 * removed afterwards. Everything listens on 127.0.0.1.
 */
export async function startDistributed(
  ctx: ScenarioContext,
  engines: Engines,
  options: {
    rateLimitPerMinute: number;
    logLevel?: 'warn' | 'error';
    /** Extra environment per service (e.g. `webhooks: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1' }`). */
    env?: Partial<Record<(typeof SERVICES)[number], Record<string, string>>>;
  },
): Promise<DistributedCluster> {
  const run = randomBytes(4).toString('hex');
  const root = resolve(__dirname, '..', '..', '..');
  const adminApiKey = `bench_${randomBytes(24).toString('base64url')}`;
  const database = (name: string) => `benchd_${run}_${name}`;
  const common = {
    PATH: process.env.PATH ?? '',
    MONGODB_URL: engines.mongodb,
    NATS_URL: engines.nats,
    NATS_NAMESPACE: `benchd_${run}`,
    INTERNAL_SIGNING_SECRET: randomBytes(32).toString('hex'),
    ELASTICSEARCH_URL: engines.elasticsearch,
    ELASTICSEARCH_INDEX: `benchd-${run}-listings`,
    LOG_LEVEL: options.logLevel ?? 'warn',
    NODE_ENV: 'production',
  };
  const children: { name: string; child: ChildProcess; lines: () => number; origin: string }[] = [];
  const killOnExit = () => children.forEach((c) => c.child.kill('SIGKILL'));
  process.once('exit', killOnExit);

  const start = async (name: string, env: Record<string, string>) => {
    const port = await freePort();
    const child = spawn(process.execPath, [join(root, 'dist', 'services', name, 'main.js')], {
      env: {
        ...common,
        ...natsUserEnv(name),
        ...env,
        ...options.env?.[name as (typeof SERVICES)[number]],
        PORT: String(port),
        MONGODB_DATABASE: database(name),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lines = 0;
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n').filter(Boolean)) {
          lines++;
          if (lines <= 20) ctx.log(`[${name}] ${line}`);
        }
      });
    }
    const entry = { name, child, lines: () => lines, origin: `http://127.0.0.1:${port}` };
    children.push(entry);
    return entry;
  };

  const stop = async () => {
    process.off('exit', killOnExit);
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(kill);
              done();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    const { default: mongoose } = await import('mongoose');
    const conn = await mongoose.createConnection(engines.mongodb).asPromise();
    try {
      for (const name of ['gateway', ...SERVICES]) await conn.useDb(database(name)).dropDatabase();
    } finally {
      await conn.close();
    }
    const indices = await fetch(`${engines.elasticsearch}/benchd-${run}-listings-*`);
    if (indices.ok)
      for (const index of Object.keys((await indices.json()) as object))
        await fetch(`${engines.elasticsearch}/${index}`, { method: 'DELETE' });
    const [{ connect }, { jetstreamManager }] = await Promise.all([
      import('@nats-io/transport-node'),
      import('@nats-io/jetstream'),
    ]);
    const nc = await connect({ servers: engines.nats, ...natsToolsAuth(), name: 'bench-distributed-cleanup' });
    try {
      const jsm = await jetstreamManager(nc);
      for await (const s of jsm.streams.list())
        if (s.config.name.startsWith(`benchd_${run}_`)) await jsm.streams.delete(s.config.name);
    } finally {
      await nc.close();
    }
  };

  const handle = (entry: (typeof children)[number]): ServerHandle => ({
    name: entry.name,
    kind: 'process',
    pid: entry.child.pid!,
    origin: entry.origin,
    logLines: entry.lines,
    sample: async () => procSample(entry.child.pid!),
    stop: async () => undefined,
  });

  try {
    const listings = await start('listings', {});
    await start('media', { LISTINGS_URL: listings.origin });
    const leads = await start('leads', { LISTINGS_URL: listings.origin });
    const media = children.find((c) => c.name === 'media')!;
    await start('webhooks', { LEADS_URL: leads.origin, MEDIA_URL: media.origin });
    const upstreams = Object.fromEntries(
      SERVICES.map((s) => [`${s.toUpperCase()}_URL`, children.find((c) => c.name === s)!.origin]),
    );
    const gateway = await start('gateway', {
      ...upstreams,
      ADMIN_API_KEY: adminApiKey,
      RATE_LIMIT_PER_MINUTE: String(options.rateLimitPerMinute),
    });
    const deadline = Date.now() + 90_000;
    for (const c of children) {
      while ((await fetch(`${c.origin}/health/ready`).catch(() => undefined))?.ok !== true) {
        if (Date.now() > deadline || children.some((x) => x.child.exitCode !== null))
          throw new Error(`the distributed services did not come up (${c.name})`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    return {
      origin: gateway.origin,
      auth: { authorization: `Bearer ${adminApiKey}` },
      gateway: handle(gateway),
      processes: children.map(handle),
      database,
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
