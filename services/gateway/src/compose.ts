import { serviceLogger } from '@estate/platform/logging';
import type { Bus, Subscription } from '@estate/bus';
import { API_KEY_REVOKED_SUBJECT, apiKeyRevoked } from '@estate/contracts/accounts';
import type { OpenApiDoc } from '@estate/platform/http';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { AccessService } from './access.service';
import { BootstrapService, firstStartBanner, type BootstrapResult } from './bootstrap.service';
import type { AgentsReader } from './clients/leads.client';
import type { JobsReader } from './clients/listings.client';
import {
  upstreamDocuments,
  upstreamReady,
  upstreamsFor,
  type Upstream,
  type UpstreamUrls,
} from './clients/upstreams.client';
import { AgentKeysSubscriber } from './events/agent-keys.subscriber';
import { IdempotencyService } from './idempotency.service';
import { AccessRepository } from './repositories/access.repository';
import { rateLimitStoreOf, type RateLimitCounters } from './repositories/rate-limit.counters';
import type { EdgeRateLimits } from './routes/edge.routes';
import { IdempotencyRepository } from './repositories/idempotency.repository';

export interface GatewayRuntime {
  access: AccessService;
  idempotency: IdempotencyService;
  bus: Pick<Bus, 'listen' | 'notify'>;
  jobs: JobsReader;
  rateLimits: EdgeRateLimits;
  /** How often a job event stream sends a keep-alive and re-reads its job (15 s unless given). */
  jobEventsHeartbeatMs?: number;
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
  bus: Pick<Bus, 'listen' | 'notify' | 'subscribe'>;
  log: Logger;
  jobs: JobsReader;
  /** Whether an agent exists and is active (an agent key must name one). */
  agents: AgentsReader;
  /** Requests per minute per live API key. */
  rateLimitPerMinute: number;
  /** Requests per minute per client address without a live key (60 unless given). */
  anonymousRateLimitPerMinute?: number;
  /** Counters shared by every gateway replica (distributed profile); counted in this process when absent. */
  rateLimitCounters?: RateLimitCounters;
  jobEventsHeartbeatMs?: number;
  /**
   * How long a live API key is trusted without reading the store; revocations reach every replica
   * at once through a notification. 0 (the default) reads the store on every request.
   */
  keyCacheMs?: number;
  /** True when another process may have changed the keys in the store: the key cache is dropped then. */
  keysChangedElsewhere?: () => boolean;
  /** Keys taken from the environment for the default account and the platform. */
  keys?: { adminKey?: string; platformKey?: string };
  upstreams?: { urls: UpstreamUrls; signingSecret: string };
  clock?: () => Date;
}

const PURGE_EVERY_MS = 15 * 60 * 1000;
/** SPEC: requests without a valid key, per client address per minute. */
export const DEFAULT_ANONYMOUS_RATE_LIMIT = 60;

/** Accounts and API keys alone, over the gateway's store (the CLI works on them offline). */
export async function composeAccess(
  store: DocumentStore,
  agents: AgentsReader,
  clock: () => Date = () => new Date(),
): Promise<AccessService> {
  return new AccessService({ repo: await AccessRepository.open(store), clock, agents });
}

export async function composeGateway(deps: GatewayDeps): Promise<GatewayRuntime> {
  const clock = deps.clock ?? (() => new Date());
  const log = serviceLogger(deps.log, 'gateway');
  const accessRepo = await AccessRepository.open(deps.store);
  const access = new AccessService({
    repo: accessRepo,
    clock,
    keyCacheMs: deps.keyCacheMs,
    keysChangedElsewhere: deps.keysChangedElsewhere,
    notify: (subject, data) => deps.bus.notify(subject, data),
    agents: deps.agents,
  });
  // Subscribed here, before any runtime of the process starts: an agent event relayed at start-up is not missed.
  const agentKeys = new AgentKeysSubscriber({ bus: deps.bus, access, log });
  await agentKeys.start();
  const bootstrap = new BootstrapService({ repo: accessRepo, access, clock });
  const idempotency = new IdempotencyService({ repo: await IdempotencyRepository.open(deps.store), clock });
  const urls = deps.upstreams?.urls;
  let timer: NodeJS.Timeout | undefined;
  let revocations: Subscription | undefined;
  const runtime: GatewayRuntime = {
    access,
    idempotency,
    bus: deps.bus,
    jobs: deps.jobs,
    rateLimits: {
      perKeyPerMinute: deps.rateLimitPerMinute,
      anonymousPerMinute: deps.anonymousRateLimitPerMinute ?? DEFAULT_ANONYMOUS_RATE_LIMIT,
      store: deps.rateLimitCounters ? rateLimitStoreOf(deps.rateLimitCounters) : undefined,
    },
    jobEventsHeartbeatMs: deps.jobEventsHeartbeatMs,
    upstreams:
      deps.upstreams && urls ? { routes: upstreamsFor(urls), signingSecret: deps.upstreams.signingSecret } : undefined,
    readiness: urls
      ? Object.fromEntries(Object.entries(urls).map(([name, url]) => [name, () => upstreamReady(name, url)]))
      : undefined,
    openapiSources: urls ? upstreamDocuments(Object.values(urls)) : undefined,
    async start() {
      revocations = deps.bus.listen(API_KEY_REVOKED_SUBJECT, (data) => {
        const event = apiKeyRevoked.safeParse(data);
        if (event.success) access.keyRevoked(event.data);
        else log.warn({ issues: event.error.issues }, 'malformed key revocation notification ignored');
      });
      runtime.boot = await bootstrap.bootstrap(deps.keys ?? {});
      timer = setInterval(() => {
        idempotency.purgeExpired().catch((err) => log.warn({ err }, 'idempotency purge failed'));
      }, PURGE_EVERY_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await revocations?.stop();
      await agentKeys.stop();
    },
    afterListen(url) {
      if (runtime.boot) process.stdout.write(firstStartBanner(runtime.boot, url));
    },
  };
  return runtime;
}
