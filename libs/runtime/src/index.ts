export * from './service-process';
export * from './distributed-adapters';
