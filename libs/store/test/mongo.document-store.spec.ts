import { randomUUID } from 'node:crypto';
import { describeWithEngines } from '@estate/testing';
import { MongoDocumentStore } from '../src/mongo.document-store';
import { documentStoreContract } from './document-store.contract';

describeWithEngines('mongo document store', ['MONGODB_URL'], (urls) => {
  documentStoreContract('mongo (MONGODB_URL)', () => {
    // One database per test: open() starts empty, reopen() is a new connection to the same data.
    let dbName = '';
    return {
      async open() {
        dbName = `contract_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName });
      },
      async reopen() {
        return MongoDocumentStore.connect(urls.MONGODB_URL, { dbName });
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
});
