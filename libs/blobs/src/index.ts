export * from './blob-store';
export * from './fs.blob-store';
export * from './gridfs.blob-store';
