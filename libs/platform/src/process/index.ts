import { NatsBus, type Bus } from '@estate/bus';
import { MongoDocumentStore, type DocumentStore } from '@estate/store';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { requireSignedIdentity } from '../auth';
import { envLogLevel, envNatsNamespace, envPort, envSecret, envUrl, exitOnConfigError, parseEnv } from '../config';
import { createHttpApp } from '../http';
import { closeOnSignals } from '../lifecycle';
import { createLogger, type Logger } from '../logging';

/** Environment every service process of the distributed profile reads. */
export const serviceEnv = {
  HOST: z.string().min(1).default('127.0.0.1'),
  MONGODB_URL: envUrl,
  NATS_URL: z.string().min(1),
  NATS_NAMESPACE: envNatsNamespace,
  INTERNAL_SIGNING_SECRET: envSecret(32),
  LOG_LEVEL: envLogLevel,
};

export interface ServiceProcessConfig {
  port: number;
  host: string;
  mongodbUrl: string;
  mongodbDatabase: string;
  natsUrl: string;
  natsNamespace?: string;
  signingSecret: string;
  logLevel: string;
}

/** Reads a service's environment: the shared variables plus its port and database name. */
export function loadServiceConfig(service: string, defaultPort: number, env: NodeJS.ProcessEnv): ServiceProcessConfig {
  const e = parseEnv(
    z.object({ ...serviceEnv, PORT: envPort(defaultPort), MONGODB_DATABASE: z.string().min(1).default(`estate_${service}`) }),
    env,
  );
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    mongodbUrl: e.MONGODB_URL,
    mongodbDatabase: e.MONGODB_DATABASE,
    natsUrl: e.NATS_URL,
    natsNamespace: e.NATS_NAMESPACE,
    signingSecret: e.INTERNAL_SIGNING_SECRET,
    logLevel: e.LOG_LEVEL,
  });
}

export interface Runtime {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Further dependencies `/health/ready` checks (a search index, say), beside the store and the bus. */
  readiness?: Record<string, () => Promise<void>>;
}

/**
 * Runs one service of the distributed profile as its own process: MongoDB and NATS adapters,
 * signed-identity check on `/v1`, health and metrics, graceful shutdown on SIGTERM.
 */
export async function runServiceProcess<R extends Runtime, C extends ServiceProcessConfig = ServiceProcessConfig>(options: {
  service: string;
  loadConfig: (env: NodeJS.ProcessEnv) => C;
  /** Builds the service over the process's adapters; `config` is what `loadConfig` returned. */
  compose: (deps: { store: DocumentStore; bus: Bus; log: Logger; config: C }) => Promise<R>;
  register: (app: FastifyInstance, runtime: R) => PromiseLike<unknown>;
  bodyLimit?: number;
  title: string;
}): Promise<void> {
  let config: C;
  try {
    config = options.loadConfig(process.env);
  } catch (err) {
    exitOnConfigError(err);
  }
  const log = createLogger({ service: options.service, level: config.logLevel });
  const store = await MongoDocumentStore.connect(config.mongodbUrl, { dbName: config.mongodbDatabase, log });
  const bus = await NatsBus.connect(config.natsUrl, { log, name: options.service, namespace: config.natsNamespace });
  const runtime = await options.compose({ store, bus, log, config });
  const app = await createHttpApp({
    service: options.service,
    logger: log,
    bodyLimit: options.bodyLimit,
    readiness: { store: () => store.ping(), bus: () => bus.ping(), ...runtime.readiness },
    openapi: { title: options.title },
  });
  requireSignedIdentity(app, config.signingSecret);
  await options.register(app, runtime);
  await app.ready();
  await runtime.start();
  closeOnSignals(log, async () => {
    await app.close();
    await runtime.stop();
    await bus.close();
    await store.close();
  });
  await app.listen({ port: config.port, host: config.host });
}

/** Prints a start-up failure without a stack trace soup and exits 1. */
export function exitOnStartFailure(err: unknown): never {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
}
