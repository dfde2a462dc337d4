import { runServiceProcess } from '@estate/runtime';
import { gatewayApp } from './app';
import { ListingsClient } from './clients/listings.client';
import { composeGateway } from './compose';
import { loadConfig } from './config';

void runServiceProcess({
  service: 'gateway',
  title: 'Estate listings and leads API',
  loadConfig,
  compose: ({ store, bus, log, config }) =>
    composeGateway({
      store,
      bus,
      log,
      jobs: new ListingsClient({ listingsUrl: config.upstreams.listings, signingSecret: config.signingSecret }),
      rateLimitPerMinute: config.rateLimitPerMinute,
      keyCacheMs: config.keyCacheMs,
      keys: config.keys,
      upstreams: { urls: config.upstreams, signingSecret: config.signingSecret },
    }),
  app: gatewayApp,
  bodyLimit: 5 * 1024 * 1024,
  edge: true,
});
