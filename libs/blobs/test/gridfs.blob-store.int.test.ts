import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { describeWithEngines } from '@estate/testing';
import mongoose from 'mongoose';
import { BlobTooLargeError } from '../src/blob-store';
import { GridFsBlobStore } from '../src/gridfs.blob-store';
import { blobStoreContract } from './blob-store.contract';

describeWithEngines('gridfs blob store', ['MONGODB_URL'], (urls) => {
  blobStoreContract('gridfs (MONGODB_URL)', () => {
    // One database per test: open() starts empty, reopen() is a new connection to the same data.
    let dbName = '';
    return {
      async open() {
        dbName = `blobs_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        return GridFsBlobStore.connect(urls.MONGODB_URL, { dbName });
      },
      async reopen() {
        return GridFsBlobStore.connect(urls.MONGODB_URL, { dbName });
      },
      async cleanup() {
        const admin = await GridFsBlobStore.connect(urls.MONGODB_URL, { dbName });
        try {
          await admin.dropDatabase();
        } finally {
          await admin.close();
        }
      },
    };
  });
});

describeWithEngines('gridfs blob store: what a failed put leaves in the database', ['MONGODB_URL'], (urls) => {
  it('keeps no files document and no chunks of a put whose source failed or ran over maxBytes', async () => {
    const dbName = `blobs_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const store = await GridFsBlobStore.connect(urls.MONGODB_URL, { dbName });
    const conn = await mongoose.createConnection(urls.MONGODB_URL, { dbName }).asPromise();
    try {
      await store.put('kept/one', Readable.from([Buffer.alloc(300_000, 1)]), { contentType: 'image/jpeg' });
      let sent = false;
      const failing = new Readable({
        read() {
          if (sent) return void this.destroy(new Error('client went away'));
          sent = true;
          this.push(Buffer.alloc(600_000, 2));
        },
      });
      await expect(store.put('lost/one', failing, { contentType: 'image/jpeg' })).rejects.toThrow('client went away');
      await expect(
        store.put('lost/two', Readable.from([Buffer.alloc(700_000, 3)]), {
          contentType: 'image/jpeg',
          maxBytes: 500_000,
        }),
      ).rejects.toThrow(BlobTooLargeError);
      const files = await conn.db!.collection('blobs.files').find({}).toArray();
      expect(files.map((f) => f.filename)).toEqual(['kept/one']);
      expect(await conn.db!.collection('blobs.chunks').countDocuments({ files_id: { $ne: files[0]._id } })).toBe(0);
    } finally {
      await store.dropDatabase();
      await store.close();
      await conn.close();
    }
  });
});

describeWithEngines('gridfs blob store: a file deleted while it is being opened', ['MONGODB_URL'], (urls) => {
  it('is missing (null), not a stream that fails, when the delete lands between finding the file and reading it', async () => {
    const dbName = `blobs_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const store = await GridFsBlobStore.connect(urls.MONGODB_URL, { dbName });
    try {
      await store.put('race/one', Readable.from([Buffer.alloc(300_000, 1)]), { contentType: 'image/jpeg' });
      const kept = await store.put('race/two', Readable.from([Buffer.alloc(1_000, 2)]), { contentType: 'image/jpeg' });
      // The file is found; the delete then lands before the download reads it.
      const found = store as unknown as { newest(key: string): Promise<unknown> };
      const newest = found.newest.bind(store);
      found.newest = async (key: string) => {
        const doc = await newest(key);
        await store.delete(key);
        return doc;
      };
      expect(await store.get('race/one')).toBeNull();
      found.newest = newest;

      // A delete removes the files document, then the chunks: a reader may meet the document without its chunks.
      const stored = await store.put('race/three', Readable.from([Buffer.alloc(2_000, 3)]), {
        contentType: 'image/jpeg',
      });
      const conn = await mongoose.createConnection(urls.MONGODB_URL, { dbName }).asPromise();
      try {
        const file = await conn.db!.collection('blobs.files').findOne({ filename: 'race/three' });
        await conn.db!.collection('blobs.chunks').deleteMany({ files_id: file!._id });
      } finally {
        await conn.close();
      }
      expect(stored.size).toBe(2_000);
      expect(await store.get('race/three')).toBeNull();

      const got = await store.get('race/two');
      const chunks: Buffer[] = [];
      for await (const chunk of got!.stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks)).toEqual(Buffer.alloc(1_000, 2));
      expect(got!.info.size).toBe(kept.size);
    } finally {
      await store.dropDatabase();
      await store.close();
    }
  });
});
