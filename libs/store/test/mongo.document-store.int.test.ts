import { randomUUID } from 'node:crypto';
import { describeWithEngines } from '@estate/testing';
import { MongoDocumentStore, type WriteMode } from '../src/mongo.document-store';
import { documentStoreContract } from './document-store.contract';

describeWithEngines('mongo document store', ['MONGODB_URL'], (urls) => {
  // `locked` forces the FerretDB write leases, so they are checked against a real MongoDB too.
  for (const writes of ['auto', 'locked'] as const satisfies readonly (WriteMode | 'auto')[]) {
    documentStoreContract(`mongo (MONGODB_URL, writes: ${writes})`, () => {
      // One database per test: open() starts empty, reopen() is a new connection to the same data.
      let dbName = '';
      return {
        async open() {
          dbName = `contract_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
          return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, writes });
        },
        async reopen() {
          return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, writes });
        },
        async cleanup() {
          const admin = await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, writes: 'native' });
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
