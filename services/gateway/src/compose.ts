import type { Bus } from '@estate/bus';
import type { OpenApiDoc } from '@estate/platform/http';
import type { DocumentCollection, DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { AccessService, firstStartBanner, type BootstrapResult } from './access.service';
import { purgeExpiredIdempotency } from './edge/idempotency';
import { upstreamsFor, type Upstream } from './edge/proxy';
import type { JobsReader } from './jobs/jobs.reader';
import { AccessRepository } from './repositories/access.repository';
import { openIdempotency, type IdempotencyDoc } from './repositories/idempotency.repository';

export interface GatewayRuntime {
  access: AccessService;
  idempotency: DocumentCollection<IdempotencyDoc>;
  bus: Pick<Bus, 'listen'>;
  jobs: JobsReader;
  clock: () => Date;
  rateLimitPerMinute: number;
  /** The services behind the gateway (distributed); absent when they run in the same process. */
  upstreams?: { routes: Upstream[]; signingSecret: string };
  /** What the first start created (keys to show once); set by start(). */
  boot?: BootstrapResult;
  readiness?: Record<string, () => Promise<void>>;
  openapiSources?: () => Promise<OpenApiDoc[]>;
  start(): Promise<void>;
  stop(): Promise<void>;
  afterListen(url: string): void;
}

export interface GatewayDeps {
  store: DocumentStore;
  bus: Pick<Bus, 'listen'>;
  log: Logger;
  jobs: JobsReader;
  rateLimitPerMinute: number;
  /** Keys taken from the environment for the default account and the platform. */
  keys?: { adminKey?: string; platformKey?: string };
  upstreams?: { urls: { listings: string; media: string; leads: string }; signingSecret: string };
  clock?: () => Date;
}

const PURGE_EVERY_MS = 15 * 60 * 1000;

/** The services' own OpenAPI documents, folded into the gateway's; a service that is down is left out. */
async function serviceDocuments(urls: string[]): Promise<OpenApiDoc[]> {
  const docs = await Promise.all(
    urls.map(async (url) => {
      try {
        const res = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(2000) });
        return res.ok ? ((await res.json()) as OpenApiDoc) : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return docs.filter((d): d is OpenApiDoc => d !== undefined);
}

async function upstreamReady(name: string, url: string): Promise<void> {
  const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1500) });
  if (!res.ok) throw new Error(`${name} answered ${res.status}`);
}

/** Accounts and API keys alone, over the gateway's store (the CLI works on them offline). */
export async function composeAccess(store: DocumentStore, clock: () => Date = () => new Date()): Promise<AccessService> {
  return new AccessService({ repo: await AccessRepository.open(store), clock });
}

export async function composeGateway(deps: GatewayDeps): Promise<GatewayRuntime> {
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log.child({ service: 'gateway' });
  const access = await composeAccess(deps.store, clock);
  const idempotency = await openIdempotency(deps.store);
  const urls = deps.upstreams?.urls;
  let timer: NodeJS.Timeout | undefined;
  const runtime: GatewayRuntime = {
    access,
    idempotency,
    bus: deps.bus,
    jobs: deps.jobs,
    clock,
    rateLimitPerMinute: deps.rateLimitPerMinute,
    upstreams: deps.upstreams && urls ? { routes: upstreamsFor(urls), signingSecret: deps.upstreams.signingSecret } : undefined,
    readiness: urls ? Object.fromEntries(Object.entries(urls).map(([name, url]) => [name, () => upstreamReady(name, url)])) : undefined,
    openapiSources: urls ? () => serviceDocuments(Object.values(urls)) : undefined,
    async start() {
      runtime.boot = await access.bootstrap(deps.keys ?? {});
      timer = setInterval(() => {
        purgeExpiredIdempotency(idempotency, clock()).catch((err) => log.warn({ err }, 'idempotency purge failed'));
      }, PURGE_EVERY_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
    },
    afterListen(url) {
      if (runtime.boot) process.stdout.write(firstStartBanner(runtime.boot, url));
    },
  };
  return runtime;
}
