export { gatewayApp } from './app';
export { composeAccess, composeGateway, type GatewayRuntime, type GatewayDeps } from './compose';
export { AccessService, firstStartBanner, type BootstrapResult } from './access.service';
export { type JobsReader } from './jobs/jobs.reader';
