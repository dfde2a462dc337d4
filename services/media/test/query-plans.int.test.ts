import { randomUUID } from 'node:crypto';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { collectionScans, describeWithEngines, QueryRecordingStore } from '@estate/testing';
import { GalleryRepository } from '../src/repositories/gallery.repository';
import { log } from './harness';

/** Every upload reads its listing's gallery: `explain` says that lookup is answered from an index. */
describeWithEngines('media queries use indexes', ['MONGODB_URL'], (urls) => {
  const dbName = `plans_media_${randomUUID().slice(0, 8)}`;
  let store: QueryRecordingStore;

  beforeAll(async () => {
    store = new QueryRecordingStore(await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName, log }));
  });
  afterAll(async () => {
    await MongoDocumentStore.connect(urls.MONGODB_URL, { dbName }).then(async (s) => {
      await s.dropDatabase();
      await s.close();
    });
    await store.close();
  });

  it('reads a gallery without a collection scan', async () => {
    const galleries = await GalleryRepository.open(store);
    await galleries.get(`lst_${randomUUID()}`);
    expect(store.queries).toHaveLength(1);
    expect(await collectionScans(urls.MONGODB_URL, dbName, store.queries)).toEqual([]);
  });
});
