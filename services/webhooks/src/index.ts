export { webhooksApp } from './app';
export { composeWebhooks, defaultWebhooksOptions, type WebhooksOptions, type WebhooksRuntime } from './compose';
export { orNull, serviceIdentity, type ResourceReader } from './clients/resources.client';
