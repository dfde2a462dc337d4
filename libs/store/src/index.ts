export * from './document-store';
export * from './nedb.document-store';
export * from './mongo.document-store';
export * from './data-dir-lock';
