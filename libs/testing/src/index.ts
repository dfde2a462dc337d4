export * from './engines';
export * from './http';
export * from './listing-fixture';
