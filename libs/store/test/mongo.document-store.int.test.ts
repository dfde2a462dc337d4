import { randomUUID } from 'node:crypto';
import { describeWithEngines } from '@estate/testing';
import { MongoDocumentStore, type EngineCapabilities } from '../src/mongo.document-store';
import { documentStoreContract } from './document-store.contract';

describeWithEngines('mongo document store', ['MONGODB_URL'], (urls) => {
  // As the server says, and with the FerretDB workarounds forced on, so they are checked on MongoDB too; a set of
  // ids also in one find, as MongoDB is asked for it, so that path is checked on the test engine.
  const variants: [string, Partial<EngineCapabilities> | undefined][] = [
    ['server capabilities', undefined],
    ['no conditional $pull, ids looked up one by one', { conditionalPull: false, idSetLookup: false }],
    ['a set of ids in one find', { idSetLookup: true }],
  ];
  for (const [label, capabilities] of variants) {
    documentStoreContract(`mongo (MONGODB_URL, ${label})`, () => {
      // One database per test: open() starts empty, reopen() is a new connection to the same data.
      let dbName = '';
      return {
        async open() {
          dbName = `contract_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
          return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, capabilities });
        },
        async reopen() {
          return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, capabilities });
        },
        async cleanup() {
          const admin = await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName });
          try {
            await admin.dropDatabase();
          } finally {
            await admin.close();
          }
        },
      };
    });
  }
});
