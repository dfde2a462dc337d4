export { installGatewayEdge } from './app';
export { composeGateway, type GatewayRuntime } from './compose';
export { AccessService } from './access.service';
export { installProxy, upstreamsFor } from './edge/proxy';
