export * from './common';
export * from './errors';
