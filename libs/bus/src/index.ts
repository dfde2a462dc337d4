// The port and its helpers. Adapters are imported by their own path (`@estate/bus/memory.bus`,
// `@estate/bus/nats.bus`) and only where a process is composed.
export * from './bus';
export * from './outbox';
