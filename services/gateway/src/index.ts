export { installGatewayEdge } from './app';
export { composeGateway, type GatewayRuntime } from './compose';
export { AccessService, firstStartBanner, type BootstrapResult } from './access.service';
export { installProxy, upstreamsFor } from './edge/proxy';
