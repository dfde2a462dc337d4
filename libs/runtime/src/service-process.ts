import {
  parseEnv,
  envLogLevel,
  envLogPretty,
  envNatsNamespace,
  envPort,
  envPublicBaseUrl,
  envTrustProxy,
  envSecret,
  envUrl,
} from '@estate/platform/config';
import { requireSignedIdentity, TRUSTED_CALLERS } from '@estate/platform/auth';
import { createHttpApp, type OpenApiDoc } from '@estate/platform/http';
import { announceListening, closeOnSignals, exitOnStartFailure, listeningUrl } from '@estate/platform/lifecycle';
import { createLogger, type Logger } from '@estate/platform/logging';
import { useCursorSecrets } from '@estate/platform/pagination';
import type { UnitOfWork } from '@estate/bus';
import type { NatsBus } from '@estate/bus/nats.bus';
import type { DocumentStore } from '@estate/store';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { connectDistributedAdapters } from './distributed-adapters';

/** The environment every service process of the distributed profile reads, as a zod schema. */
export function serviceEnv(service: string, defaultPort: number) {
  return z.object({
    PORT: envPort(defaultPort),
    HOST: z.string().min(1).default('127.0.0.1'),
    MONGODB_URL: envUrl,
    MONGODB_DATABASE: z.string().min(1).default(`estate_${service}`),
    NATS_URL: z.string().min(1),
    NATS_NAMESPACE: envNatsNamespace,
    INTERNAL_SIGNING_SECRET: envSecret(32),
    /** The secret being rotated out: still accepted (identities, cursors) until it is unset. */
    INTERNAL_SIGNING_SECRET_PREVIOUS: envSecret(32).optional(),
    /** This process's own NATS user (each service has one, allowed only its subjects). */
    NATS_USER: z.string().min(1).optional(),
    NATS_PASSWORD: z.string().min(1).optional(),
    LOG_LEVEL: envLogLevel,
    PUBLIC_BASE_URL: envPublicBaseUrl,
    LOG_PRETTY: envLogPretty,
    TRUST_PROXY: envTrustProxy,
  });
}

type ServiceEnv = z.infer<ReturnType<typeof serviceEnv>>;

/** The shared part of a service's configuration, nested as the code reads it. */
export function processConfig(e: ServiceEnv) {
  return {
    port: e.PORT,
    host: e.HOST,
    mongodb: { url: e.MONGODB_URL, database: e.MONGODB_DATABASE },
    nats: { url: e.NATS_URL, namespace: e.NATS_NAMESPACE, user: e.NATS_USER, password: e.NATS_PASSWORD },
    signingSecret: e.INTERNAL_SIGNING_SECRET,
    previousSigningSecret: e.INTERNAL_SIGNING_SECRET_PREVIOUS,
    logLevel: e.LOG_LEVEL,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    logPretty: e.LOG_PRETTY,
    trustProxy: e.TRUST_PROXY,
  };
}

export type ProcessConfig = ReturnType<typeof processConfig>;

/** Reads a configuration schema from the process environment (a bad value throws ConfigError naming it). */
export function configLoader<S extends z.ZodType>(schema: S): (env: NodeJS.ProcessEnv) => Readonly<z.infer<S>> {
  return (env) => parseEnv(schema, env);
}

/** What a service's compose function returns: its parts, started and stopped with the process. */
export interface ServiceRuntime {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Dependencies `/health/ready` checks beside the store and the bus (a search index, the upstreams). */
  readiness?: Record<string, () => Promise<void>>;
  /** Further OpenAPI documents to fold into this process's own (the gateway's services). */
  openapiSources?: () => Promise<OpenApiDoc[]>;
  /** Called once the process listens (the gateway prints its first-start keys). */
  afterListen?(url: string): void;
}

export interface ServiceProcess<C extends ProcessConfig, R extends ServiceRuntime> {
  service: string;
  title: string;
  loadConfig: (env: NodeJS.ProcessEnv) => C;
  /** Builds the service over the process's adapters. */
  compose: (deps: { store: DocumentStore; bus: NatsBus; units: UnitOfWork; log: Logger; config: C }) => Promise<R>;
  /** The service as a Fastify plugin. */
  app: (app: FastifyInstance, options: { runtime: R }) => Promise<void>;
  /** Largest JSON body, in bytes (1 MB unless given). */
  bodyLimit?: number;
  /** The gateway authenticates API keys itself; every other service admits only the gateway's signed identity. */
  edge?: boolean;
}

/**
 * Runs one service of the distributed profile as its own process: MongoDB and NATS adapters,
 * signed-identity check on `/v1`, health and metrics, graceful shutdown on SIGTERM. A failed
 * start prints why and exits 1.
 */
export async function runServiceProcess<C extends ProcessConfig, R extends ServiceRuntime>(
  spec: ServiceProcess<C, R>,
): Promise<void> {
  try {
    const config = spec.loadConfig(process.env);
    // Every replica of the deployment signs and accepts the same cursors.
    const secrets = [config.signingSecret, ...(config.previousSigningSecret ? [config.previousSigningSecret] : [])];
    useCursorSecrets(secrets);
    const log = createLogger({ service: spec.service, level: config.logLevel, pretty: config.logPretty });
    const adapters = await connectDistributedAdapters(config, spec.service, log);
    const runtime = await spec.compose({
      store: adapters.store,
      bus: adapters.bus,
      units: adapters.units,
      log,
      config,
    });
    const app = await createHttpApp({
      service: spec.service,
      logger: log,
      bodyLimit: spec.bodyLimit,
      readiness: { ...adapters.readiness, ...runtime.readiness },
      publicBaseUrl: config.publicBaseUrl,
      trustProxy: config.trustProxy,
      openapi: { title: spec.title, merge: runtime.openapiSources },
    });
    if (!spec.edge) requireSignedIdentity(app, { secrets, callers: TRUSTED_CALLERS[spec.service] ?? {} });
    await app.register(spec.app, { runtime });
    await app.ready();
    await runtime.start();
    closeOnSignals(log, async () => {
      await app.close();
      await runtime.stop();
      await adapters.close();
    });
    await app.listen({ port: config.port, host: config.host });
    const url = listeningUrl(app, config.host);
    runtime.afterListen?.(url);
    announceListening(url);
  } catch (err) {
    exitOnStartFailure(err);
  }
}
