import { randomUUID } from 'node:crypto';
import { collectionScans, describeWithEngines, openRecordingStore, type QueryRecordingStore } from '@estate/testing';
import { GalleryRepository } from '../src/repositories/gallery.repository';
import { log } from './harness';

/** Every upload reads its listing's gallery: `explain` says that lookup is answered from an index. */
describeWithEngines('media queries use indexes', ['MONGODB_URL'], (urls) => {
  const dbName = `plans_media_${randomUUID().slice(0, 8)}`;
  let store: QueryRecordingStore;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ store, drop } = await openRecordingStore(urls.MONGODB_URL, dbName, log));
  });
  afterAll(async () => {
    await drop();
  });

  it('reads a gallery without a collection scan', async () => {
    const galleries = await GalleryRepository.open(store);
    await galleries.get(`lst_${randomUUID()}`);
    expect(store.queries).toHaveLength(1);
    expect(await collectionScans(urls.MONGODB_URL, dbName, store.queries)).toEqual([]);
  });
});
