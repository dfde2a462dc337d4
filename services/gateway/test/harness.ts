import type { AddressInfo } from 'node:net';
import { MemoryBus } from '@estate/bus/memory.bus';
import type { Account } from '@estate/contracts/accounts';
import { AppError } from '@estate/platform/errors';
import { createHttpApp } from '@estate/platform/http';
import type { DocumentStore } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { gatewayApp } from '../src/app';
import type { JobsReader } from '../src/clients/listings.client';
import type { AgentsReader } from '../src/clients/leads.client';
import { composeGateway, type GatewayRuntime } from '../src/compose';
import type { RateLimitCounters } from '../src/repositories/rate-limit.counters';

export const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export const ADMIN_KEY = 'ek_test_admin_key_0123456789abcdefghijkl';
export const PLATFORM_KEY = 'ek_test_platform_key_0123456789abcdefghij';

/**
 * A route standing in for the services behind the edge: `GET /v1/echo` answers the identity the
 * edge attached; `POST /v1/echo` answers 201 with a running count (so a replay is told from a
 * second run), 422 for `{ "fail": true }`, and waits while held.
 */
export class StandIn {
  posts = 0;
  private held?: { entered: () => void; released: Promise<void> };

  /** Holds the next POSTs until `release()`; `entered` resolves when the first one reaches the route. */
  hold(): { entered: Promise<void>; release: () => void } {
    let entered!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (entered = resolve));
    this.held = { entered, released: new Promise<void>((resolve) => (release = resolve)) };
    return {
      entered: reached,
      release: () => {
        this.held = undefined;
        release();
      },
    };
  }

  readonly plugin = async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/echo', async (request) => ({ identity: request.identity }));
    app.post('/v1/echo', async (request, reply) => {
      const held = this.held;
      if (held) {
        held.entered();
        await held.released;
      }
      if ((request.body as { fail?: boolean } | undefined)?.fail)
        throw new AppError('validation_failed', 'The stand-in was asked to fail');
      const n = ++this.posts;
      return reply
        .code(201)
        .header('location', `/v1/echo/${n}`)
        .send({ n, identity: request.identity, body: request.body });
    });
  };
}

export interface GatewayHarness {
  app: FastifyInstance;
  runtime: GatewayRuntime;
  store: DocumentStore;
  bus: MemoryBus;
  standIn: StandIn;
  /** The default account, the admin key's. */
  account: Account;
  /** A request with `Authorization: Bearer <key>` (none for null). */
  call(key: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Listens on a free local port (for streams) and returns the base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** Jobs as seen without a listings service: none. */
const noJobs: JobsReader = {
  get: async (_who, jobId) => {
    throw new AppError('job_not_found', `Job ${jobId} does not exist`);
  },
};

/**
 * The gateway alone, on embedded adapters (SQLite in memory, MemoryBus), with the stand-in route
 * registered beside it as the services are in the embedded process, so the edge covers it.
 */
export async function startGateway(
  options: {
    jobs?: JobsReader;
    rateLimitPerMinute?: number;
    anonymousRateLimitPerMinute?: number;
    rateLimitCounters?: RateLimitCounters;
    jobEventsHeartbeatMs?: number;
    clock?: () => Date;
    keyCacheMs?: number;
    /** The leads service's agents as the gateway sees them (default: every id names an active agent). */
    agents?: AgentsReader;
    /** Another gateway's store and bus, to run replicas side by side (closed by their owner). */
    shared?: { store: DocumentStore; bus: MemoryBus };
  } = {},
): Promise<GatewayHarness> {
  const store = options.shared?.store ?? SqliteDocumentStore.open(':memory:');
  const bus = options.shared?.bus ?? new MemoryBus(log);
  const runtime = await composeGateway({
    store,
    bus,
    log,
    jobs: options.jobs ?? noJobs,
    agents: options.agents ?? { state: async () => ({ active: true, version: 1 }) },
    rateLimitPerMinute: options.rateLimitPerMinute ?? 1000,
    anonymousRateLimitPerMinute: options.anonymousRateLimitPerMinute ?? 1000,
    rateLimitCounters: options.rateLimitCounters,
    jobEventsHeartbeatMs: options.jobEventsHeartbeatMs,
    keyCacheMs: options.keyCacheMs,
    keys: { adminKey: ADMIN_KEY, platformKey: PLATFORM_KEY },
    clock: options.clock,
  });
  const standIn = new StandIn();
  const app = await createHttpApp({
    service: 'gateway',
    logger: log,
    bodyLimit: 5 * 1024 * 1024,
    openapi: { title: 'Gateway' },
  });
  await app.register(gatewayApp, { runtime });
  await app.register(standIn.plugin);
  await app.ready();
  await runtime.start();
  let closed = false;
  return {
    app,
    runtime,
    store,
    bus,
    standIn,
    account: runtime.boot!.account,
    call: (key, opts) =>
      app.inject({ ...opts, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(opts.headers ?? {}) } }),
    async listen() {
      await app.listen({ port: 0, host: '127.0.0.1' });
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    },
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await runtime.stop();
      if (options.shared) return;
      await bus.close();
      await store.close();
    },
  };
}
