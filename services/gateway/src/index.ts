export { gatewayApp } from './app';
export { composeAccess, composeGateway, type GatewayRuntime, type GatewayDeps } from './compose';
export { AccessService } from './access.service';
export { firstStartBanner, type BootstrapResult } from './bootstrap.service';
export { type JobsReader } from './clients/listings.client';
export { NatsRateLimitCounters, RATE_LIMIT_BUCKET } from './repositories/nats-rate-limit.store';
export { type AgentsReader, type AgentState } from './clients/leads.client';
