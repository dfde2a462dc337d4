export * from './document-store';
export * from './nedb.document-store';
