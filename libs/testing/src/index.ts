export * from './engines';
export * from './http';
export * from './listing-fixture';
export * from './sse';
export * from './build';
export * from './eventually';
export * from './query-plans';
