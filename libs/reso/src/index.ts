export * from './errors';
export * from './filter';
export * from './mapping';
export * from './edmx';
export * from './query';
export * from './http';
export * from './negotiation';
