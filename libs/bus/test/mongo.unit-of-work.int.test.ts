import { randomBytes } from 'node:crypto';
import { describeWithEngines } from '@estate/testing';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import pino from 'pino';
import { MongoUnitOfWork } from '../src/mongo.unit-of-work';
import { unitOfWorkContract } from './unit-of-work.contract';

const log = pino({ level: 'silent' });

describeWithEngines('MongoUnitOfWork', ['MONGODB_URL'], (urls) => {
  unitOfWorkContract('mongodb wire (in-document outbox)', async (bus) => {
    const store = await MongoDocumentStore.connect(urls.MONGODB_URL, {
      dbName: `uow_${randomBytes(4).toString('hex')}`,
    });
    return {
      store,
      units: new MongoUnitOfWork({ bus, log }),
      async close() {
        await store.dropDatabase();
        await store.close();
      },
    };
  });
});
