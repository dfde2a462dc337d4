import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  buildDist,
  fixedPort,
  natsServiceCredentials,
  natsUrlWithoutCredentials,
  REPO_ROOT,
  spawnListening,
  startOnSamePort,
  type EngineVar,
} from '@estate/testing';
import { natsConnectOptions } from '@estate/bus/nats.bus';
import { RATE_LIMIT_BUCKET } from '@estate/gateway';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import mongoose from 'mongoose';

/**
 * Tier 3 harness: the services as separate processes (the bundles in dist/) on the real engines, each cluster with
 * a NATS namespace, databases and a search index of its own, so suites running side by side never share work.
 */

export type ServiceName = 'listings' | 'media' | 'leads' | 'webhooks';
export type ProcessName = ServiceName | 'gateway';
export type EngineUrls = Record<EngineVar, string>;

export interface RunningService {
  name: ProcessName;
  /** Where it listens ('' until it does). */
  url: string;
  child: ChildProcess;
  output: () => string;
  /** What it was started with (a restart reuses it, and its port once it has one). */
  env: Record<string, string>;
  /** Resolves once it listens (its `url` is set then); rejects if it exits first. */
  listening: Promise<void>;
}

export interface ClusterOptions {
  /** Prefix of the run's databases, NATS namespace and search index, e.g. 'sysleads'. */
  name: string;
  engines: EngineUrls;
  /** Processes per service (default one each; 0 leaves a service out). Gateway i forwards to replica i of each. */
  replicas?: Partial<Record<ServiceName, number>>;
  gateways?: number;
  /** Which bootstrap keys the gateways get (default both). */
  keys?: { admin?: boolean; platform?: boolean };
  logLevel?: 'info' | 'warn';
  /** More environment for every process (e.g. `RATE_LIMIT_PER_MINUTE` for a load test). */
  envAll?: Record<string, string>;
  /** Called as each process is spawned, before it listens (a fault test watches one start); see its `listening`. */
  onStarted?: (service: RunningService) => void;
  /** Extra environment per process kind (e.g. a shortened webhook retry schedule). */
  env?: Partial<Record<ProcessName, Record<string, string>>>;
}

export interface Cluster {
  run: string;
  namespace: string;
  /** The first gateway, and all of them. */
  gateway: string;
  gateways: string[];
  keys: { admin: string; platform: string };
  /** The secret the gateways sign forwarded identities with (to call a service directly, as a gateway would). */
  signingSecret: string;
  processes: RunningService[];
  /** The `replica`-th process of a service (in start order). */
  process(name: ProcessName, replica?: number): RunningService;
  /** Kills a process with `signal` (SIGKILL: a crash) and starts it again on the same port and data; resolves once it is ready. */
  restart(name: ProcessName, replica?: number, signal?: NodeJS.Signals): Promise<RunningService>;
  stop(): Promise<void>;
}

// Webhooks last: it reads resources from the others.
const SERVICES: ServiceName[] = ['listings', 'media', 'leads', 'webhooks'];

/**
 * Spawns a process of dist/. Without a port in `env` it binds port 0 and announces the port the system gave it
 * (a port picked free here and bound there later may be taken in between); a restart passes the port it had.
 */
function startProcess(name: ProcessName, env: Record<string, string>): RunningService {
  const started = spawnListening(name, join(REPO_ROOT, 'dist', 'services', name, 'main.js'), {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
    // A process waits for its engines before it listens (a fault test starts them late), on a machine maybe busy.
    timeoutMs: 120_000,
  });
  const service: RunningService = {
    name,
    url: '',
    child: started.child,
    output: started.output,
    env,
    listening: started.listening.then((url) => {
      service.url = url;
      service.env = { ...env, PORT: new URL(url).port };
    }),
  };
  service.listening.catch(() => undefined);
  return service;
}

async function waitUp(url: string, probe: string, all: RunningService[], timeoutMs: number): Promise<void> {
  const start = Date.now();
  for (;;) {
    const dead = all.find((s) => s.child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited early:\n${dead.output()}`);
    const res = await fetch(`${url}${probe}`).catch(() => undefined);
    if (res?.ok) return;
    if (Date.now() - start > timeoutMs) {
      const tails = all.map((s) => `--- ${s.name}\n${s.output().slice(-2000)}`).join('\n');
      throw new Error(`${url} not up after ${timeoutMs} ms:\n${tails}`);
    }
    await sleep(250);
  }
}

/** SIGTERM, then SIGKILL if a process has not gone within the grace period. */
async function stopAll(services: RunningService[], graceMs = 10_000): Promise<void> {
  await Promise.all(
    services.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.child.exitCode !== null || s.child.signalCode !== null) return resolve();
          const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
          s.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          s.child.kill('SIGTERM');
        }),
    ),
  );
}

const searchIndex = (name: string, run: string) => `${name}-${run}-listings`;

/**
 * Starts the services, then the gateways one after the other (the first makes the gateway database, the next
 * find it), and waits until every process is ready.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  buildDist();
  const run = randomBytes(4).toString('hex');
  const namespace = `${options.name}_${run}`;
  const keys = {
    admin: `ek_${options.name}_admin_${randomBytes(16).toString('hex')}`,
    platform: `ek_${options.name}_platform_${randomBytes(16).toString('hex')}`,
  };
  const signingSecret = randomBytes(32).toString('hex');
  const replicas = Object.fromEntries(SERVICES.map((s) => [s, options.replicas?.[s] ?? 1])) as Record<
    ServiceName,
    number
  >;
  const database = (name: ProcessName) => `${options.name}_${run}_${name}`;
  const { MONGODB_URL, NATS_URL, ELASTICSEARCH_URL } = options.engines;
  const common = {
    MONGODB_URL,
    // Each process connects as its own NATS user (when the server requires users), never as the tests' one.
    NATS_URL: natsUrlWithoutCredentials(NATS_URL),
    NATS_NAMESPACE: namespace,
    INTERNAL_SIGNING_SECRET: signingSecret,
    LOG_LEVEL: options.logLevel ?? 'info',
    ELASTICSEARCH_URL,
    ELASTICSEARCH_INDEX: searchIndex(options.name, run),
    ...options.envAll,
  };
  const processes: RunningService[] = [];
  const instances = (name: ProcessName) => processes.filter((s) => s.name === name);
  const cluster: Cluster = {
    run,
    namespace,
    gateway: '',
    gateways: [],
    keys,
    signingSecret,
    processes,
    process(name, replica = 0) {
      const found = instances(name)[replica];
      if (!found) throw new Error(`no ${name} process #${replica} in this cluster`);
      return found;
    },
    async restart(name, replica = 0, signal = 'SIGKILL') {
      const old = cluster.process(name, replica);
      if (old.child.exitCode === null && old.child.signalCode === null) {
        const exited = new Promise((resolve) => old.child.once('exit', resolve));
        old.child.kill(signal);
        await exited;
      }
      // On the port it had: the gateways and the other services know it.
      const fresh = await startOnSamePort(async () => {
        const started = startProcess(name, old.env);
        await started.listening;
        return started;
      });
      processes[processes.indexOf(old)] = fresh;
      await waitUp(fresh.url, '/health/ready', processes, 60_000);
      return fresh;
    },
    async stop() {
      if (process.env.DEBUG_SYS)
        for (const s of processes) process.stderr.write(`--- ${s.name}\n${s.output().slice(-3000)}\n`);
      await stopAll(processes);
      await dropRun(options.engines, {
        databases: ['gateway' as const, ...SERVICES.filter((s) => replicas[s] > 0)].map(database),
        searchIndex: searchIndex(options.name, run),
        namespace,
      });
    },
  };
  const launch = (name: ProcessName, env: Record<string, string>): RunningService => {
    const service = startProcess(name, env);
    processes.push(service);
    options.onStarted?.(service);
    return service;
  };
  const mediaPort = replicas.media > 0 ? String(await fixedPort()) : undefined;
  const listening = (name: ServiceName) => Promise.all(instances(name).map((s) => s.listening));
  const launchReplicas = (name: ServiceName) => {
    for (let i = 0; i < replicas[name]; i++) {
      const env: Record<string, string> = { ...common, MONGODB_DATABASE: database(name) };
      // Listings reads galleries from media (RESO's $expand=Media), and media is started after listings: its first
      // replica listens on a port chosen before either starts.
      if (name === 'listings' && mediaPort) env.MEDIA_URL = `http://127.0.0.1:${mediaPort}`;
      if (name === 'media' && i === 0 && mediaPort) env.PORT = mediaPort;
      // Media and leads ask listings about a listing whose event has not reached them yet.
      const listings = (name === 'media' || name === 'leads') && replicas.listings > 0 ? instances('listings') : [];
      if (listings.length > 0) env.LISTINGS_URL = listings[i % listings.length].url;
      // The webhooks service reads leads and media from their services (their first replica).
      if (name === 'webhooks') {
        if (replicas.leads > 0) env.LEADS_URL = instances('leads')[0].url;
        if (replicas.media > 0) env.MEDIA_URL = instances('media')[0].url;
      }
      launch(name, { ...env, ...natsServiceCredentials(name), ...options.env?.[name] });
    }
  };
  try {
    // Each process once the addresses it is given are known: media and leads need listings', webhooks leads' and
    // media's.
    launchReplicas('listings');
    await listening('listings');
    launchReplicas('leads');
    launchReplicas('media');
    await Promise.all([listening('leads'), listening('media')]);
    launchReplicas('webhooks');
    await listening('webhooks');
    const upstreamsFor = (gateway: number) =>
      Object.fromEntries(
        SERVICES.filter((s) => replicas[s] > 0).map((s) => [
          `${s.toUpperCase()}_URL`,
          instances(s)[gateway % replicas[s]].url,
        ]),
      );
    // The gateway is ready when every upstream is; without all of them it can only be live.
    const probe = SERVICES.every((s) => replicas[s] > 0) ? '/health/ready' : '/health/live';
    for (let i = 0; i < (options.gateways ?? 1); i++) {
      const gateway = launch('gateway', {
        ...common,
        MONGODB_DATABASE: database('gateway'),
        ...natsServiceCredentials('gateway'),
        ...upstreamsFor(i),
        ...options.env?.gateway,
        ...(options.keys?.admin === false ? {} : { ADMIN_API_KEY: keys.admin }),
        ...(options.keys?.platform === false ? {} : { PLATFORM_API_KEY: keys.platform }),
      });
      await gateway.listening;
      cluster.gateways.push(gateway.url);
      await waitUp(gateway.url, probe, processes, 60_000);
    }
    cluster.gateway = cluster.gateways[0];
    for (const s of processes) await waitUp(s.url, s.name === 'gateway' ? probe : '/health/ready', processes, 60_000);
  } catch (err) {
    await cluster.stop().catch(() => undefined);
    throw err;
  }
  return cluster;
}

/** Removes what a run left on the engines: its databases, the indices behind its search alias, its JetStream streams. */
export async function dropRun(
  engines: EngineUrls,
  run: { databases: string[]; searchIndex: string; namespace: string },
): Promise<void> {
  const conn = await mongoose.createConnection(engines.MONGODB_URL).asPromise();
  try {
    for (const db of run.databases) await conn.useDb(db).dropDatabase();
  } finally {
    await conn.close();
  }
  // By name: wildcard deletes may be refused.
  const res = await fetch(`${engines.ELASTICSEARCH_URL}/${run.searchIndex}-*`);
  if (res.ok) {
    for (const index of Object.keys((await res.json()) as Record<string, unknown>)) {
      await fetch(`${engines.ELASTICSEARCH_URL}/${index}`, { method: 'DELETE' });
    }
  }
  // The durable consumers go with their streams.
  const nc = await connect({ ...natsConnectOptions(engines.NATS_URL), name: `cleanup-${run.namespace}` });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith(`${run.namespace}_`)) await jsm.streams.delete(s.config.name);
      // The gateways' rate-limit bucket is one per server; the run's counters are its keys under the namespace.
      if (s.config.name === `KV_${RATE_LIMIT_BUCKET}`)
        await jsm.streams.purge(s.config.name, { filter: `$KV.${RATE_LIMIT_BUCKET}.${run.namespace}.>` });
    }
  } finally {
    await nc.close();
  }
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // Whatever JSON the endpoint answered: tests assert on its shape.
  body: ReturnType<typeof JSON.parse>;
}

export type Api = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<ApiResponse>;

/** Calls the API at `baseUrl` as a client would, with `key` as its bearer token (none when null); JSON or multipart bodies. */
export function apiClient(baseUrl: string, key: string | null): Api {
  return async (method, path, body, headers = {}) => {
    const multipart = body instanceof FormData;
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined && !multipart ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : multipart ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}
