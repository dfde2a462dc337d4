export * from './bus';
export * from './memory.bus';
export * from './outbox';
export * from './nats.bus';
