import { randomUUID } from 'node:crypto';
import { collectionScans, describeWithEngines, openRecordingStore, type QueryRecordingStore } from '@estate/testing';
import { AccessRepository } from '../src/repositories/access.repository';
import { IdempotencyRepository } from '../src/repositories/idempotency.repository';
import { log } from './harness';

/** Every request's API-key lookup and idempotency check must be answered from an index: `explain` says so. */
describeWithEngines('gateway queries use indexes', ['MONGODB_URL'], (urls) => {
  const dbName = `plans_gateway_${randomUUID().slice(0, 8)}`;
  let store: QueryRecordingStore;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ store, drop } = await openRecordingStore(urls.MONGODB_URL, dbName, log));
  });
  afterAll(async () => {
    await drop();
  });

  it('looks keys and idempotency records up without a collection scan', async () => {
    const access = await AccessRepository.open(store);
    const idempotency = await IdempotencyRepository.open(store);
    await access.findKey('a'.repeat(64));
    await access.findLiveKey('a'.repeat(64));
    await idempotency.find(`idem_${randomUUID()}`);
    expect(store.queries).toHaveLength(3);
    expect(await collectionScans(urls.MONGODB_URL, dbName, store.queries)).toEqual([]);
  });
});
