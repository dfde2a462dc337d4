// The port and its helpers. Adapters are imported by their own path (`@estate/bus/memory.bus`,
// `@estate/bus/nats.bus`, `@estate/bus/sqlite.unit-of-work`, `@estate/bus/mongo.unit-of-work`) and only where a
// process is composed.
export * from './bus';
export * from './outbox';
export * from './unit-of-work';
