// The port and its helpers. Adapters are imported by their own path (`@estate/store/sqlite.document-store`,
// `@estate/store/mongo.document-store`) and only where a process is composed.
export * from './document-store';
export * from './filters';
export * from './keyset';
export * from './update-versioned';
export * from './storable';
export * from './owned';
