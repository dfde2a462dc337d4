import { runServiceProcess } from '@estate/runtime';
import { gatewayApp } from './app';
import { LeadsClient } from './clients/leads.client';
import { ListingsClient } from './clients/listings.client';
import { composeGateway } from './compose';
import { loadConfig } from './config';
import { NatsRateLimitCounters } from './repositories/nats-rate-limit.store';
import { RATE_LIMIT_WINDOW_MS } from './routes/edge.routes';

void runServiceProcess({
  service: 'gateway',
  title: 'Estate listings and leads API',
  loadConfig,
  compose: async ({ store, bus, log, config }) =>
    composeGateway({
      store,
      bus,
      log,
      jobs: new ListingsClient({ listingsUrl: config.upstreams.listings, signingSecret: config.signingSecret }),
      agents: new LeadsClient({ leadsUrl: config.upstreams.leads, signingSecret: config.signingSecret }),
      rateLimitPerMinute: config.rateLimitPerMinute,
      anonymousRateLimitPerMinute: config.anonymousRateLimitPerMinute,
      // Every replica counts against the same limits: the counters live in NATS beside the bus.
      rateLimitCounters: await NatsRateLimitCounters.open(bus.connection, {
        namespace: config.nats.namespace,
        windowMs: RATE_LIMIT_WINDOW_MS,
        log,
      }),
      keyCacheMs: config.keyCacheMs,
      keys: config.keys,
      upstreams: { urls: config.upstreams, signingSecret: config.signingSecret },
    }),
  app: gatewayApp,
  bodyLimit: 5 * 1024 * 1024,
  edge: true,
});
