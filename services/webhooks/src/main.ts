import { runServiceProcess } from '@estate/runtime';
import { webhooksApp } from './app';
import { HttpResourceReader } from './clients/resources.client';
import { composeWebhooks } from './compose';
import { loadConfig } from './config';

void runServiceProcess({
  service: 'webhooks',
  title: 'Webhooks service',
  loadConfig,
  compose: ({ store, bus, units, log, config }) =>
    composeWebhooks({
      store,
      bus,
      units,
      log,
      secretKey: config.secretKey,
      resources: new HttpResourceReader({ urls: config.resources, signingSecret: config.signingSecret }),
      options: config.webhooks,
      ...(config.publicBaseUrl ? { publicBaseUrl: config.publicBaseUrl } : {}),
    }),
  app: webhooksApp,
});
