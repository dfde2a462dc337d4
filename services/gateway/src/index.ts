export { installGatewayEdge } from './app';
export { composeGateway, type GatewayRuntime } from './compose';
export { AccessService, firstStartBanner, type BootstrapResult } from './access.service';
export { installProxy, upstreamsFor } from './edge/proxy';
export { jobEventsRoutes, type JobEventsOptions } from './jobs/job-events.routes';
export { HttpJobsReader, type JobsReader } from './jobs/jobs.reader';
