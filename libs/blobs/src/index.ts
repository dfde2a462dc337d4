// The port and its helpers. Adapters are imported by their own path (`@estate/blobs/fs.blob-store`,
// `@estate/blobs/gridfs.blob-store`) and only where a process is composed.
export * from './blob-store';
