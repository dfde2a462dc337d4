import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import mongoose from 'mongoose';
import type { Logger } from 'pino';
import { assertBlobKey, MeasuringStream, type BlobInfo, type BlobStore, type PutOptions } from './blob-store';

type FileDoc = mongoose.mongo.GridFSFile & { metadata?: { contentType?: string; sha256?: string } };

export interface GridFsOptions {
  /** Database name; defaults to the one in the URL. */
  dbName?: string;
  /** GridFS bucket (collections `<bucket>.files` and `<bucket>.chunks`). */
  bucketName?: string;
  log?: Logger;
}

/** Uploads in flight are stored under this prefix and renamed to their key once complete. */
const STAGING_PREFIX = '~staging/';
/** Staged uploads older than this at connect were cut short by a crash. */
const STALE_STAGING_MS = 60 * 60 * 1000;
const CHUNK_BYTES = 255 * 1024;

/**
 * Distributed adapter: MongoDB GridFS through the driver mongoose bundles. A put streams into a
 * staged file (`~staging/<uuid>`), then one update of its files document gives it its key and
 * digest: that rename is the commit point, so readers never see a partial upload. Older files
 * of the same key are deleted afterwards; until then the newest one is what readers get.
 */
export class GridFsBlobStore implements BlobStore {
  readonly kind = 'gridfs' as const;

  private constructor(
    private readonly connection: mongoose.Connection,
    private readonly bucket: mongoose.mongo.GridFSBucket,
    private readonly files: mongoose.mongo.Collection<FileDoc>,
    private readonly log?: Logger,
  ) {}

  static async connect(url: string, options: GridFsOptions = {}): Promise<GridFsBlobStore> {
    const connection = mongoose.createConnection(url, {
      dbName: options.dbName,
      serverSelectionTimeoutMS: 5000,
      connectTimeoutMS: 5000,
      socketTimeoutMS: 60_000,
      maxPoolSize: 20,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
    });
    connection.on('error', (err: unknown) => options.log?.error({ err }, 'gridfs connection error'));
    try {
      await connection.asPromise();
      const db = connection.db;
      if (!db) throw new Error('mongo connection has no database');
      const bucketName = options.bucketName ?? 'blobs';
      const bucket = new mongoose.mongo.GridFSBucket(db, { bucketName, chunkSizeBytes: CHUNK_BYTES });
      const store = new GridFsBlobStore(connection, bucket, db.collection<FileDoc>(`${bucketName}.files`), options.log);
      await store.removeStaleStaging();
      return store;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  async put(key: string, source: Readable, options: PutOptions): Promise<BlobInfo> {
    assertBlobKey(key);
    const measure = new MeasuringStream(key, options.maxBytes);
    const upload = this.bucket.openUploadStream(`${STAGING_PREFIX}${randomUUID()}`, {
      metadata: { contentType: options.contentType },
    });
    try {
      await pipeline(source, measure, upload);
      const committed = await this.files.findOneAndUpdate(
        { _id: upload.id },
        { $set: { filename: key, 'metadata.sha256': measure.digest() } },
        { returnDocument: 'after' },
      );
      if (!committed) throw new Error(`gridfs: the staged upload of ${key} vanished before it was committed`);
      await this.removeOlder(key, committed);
      return toInfo(committed);
    } catch (err) {
      await this.bucket.delete(upload.id).catch(() => undefined);
      throw err;
    }
  }

  async stat(key: string): Promise<BlobInfo | null> {
    assertBlobKey(key);
    const doc = await this.newest(key);
    return doc ? toInfo(doc) : null;
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async get(key: string): Promise<{ info: BlobInfo; stream: Readable } | null> {
    assertBlobKey(key);
    const doc = await this.newest(key);
    if (!doc) return null;
    const stream = this.bucket.openDownloadStream(doc._id);
    // A delete can land between finding the file and reading it: gone then, like a file never stored.
    return (await started(stream, doc.length)) ? { info: toInfo(doc), stream } : null;
  }

  async delete(key: string): Promise<boolean> {
    assertBlobKey(key);
    const docs = await this.files.find({ filename: key }, { projection: { _id: 1 } }).toArray();
    let removed = false;
    for (const doc of docs) {
      try {
        await this.bucket.delete(doc._id);
        removed = true;
      } catch (err) {
        // Another delete (or a put replacing it) got there first.
        if (!(err instanceof mongoose.mongo.MongoRuntimeError)) throw err;
      }
    }
    return removed;
  }

  async ping(): Promise<void> {
    await this.connection.db?.admin().ping();
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  /** Drops the database (tests). */
  async dropDatabase(): Promise<void> {
    await this.connection.db?.dropDatabase();
  }

  private async newest(key: string): Promise<FileDoc | null> {
    const [doc] = await this.files.find({ filename: key }).sort({ uploadDate: -1, _id: -1 }).limit(1).toArray();
    return doc ?? null;
  }

  /** Older versions of a key, replaced by `current`. */
  private async removeOlder(key: string, current: FileDoc): Promise<void> {
    const older = await this.files
      .find(
        { filename: key, _id: { $ne: current._id }, uploadDate: { $lte: current.uploadDate } },
        { projection: { _id: 1 } },
      )
      .toArray();
    for (const doc of older) await this.bucket.delete(doc._id).catch(() => undefined);
  }

  private async removeStaleStaging(): Promise<void> {
    const cutoff = new Date(Date.now() - STALE_STAGING_MS);
    const stale = await this.files
      .find(
        { filename: { $gte: STAGING_PREFIX, $lt: `${STAGING_PREFIX}\uffff` }, uploadDate: { $lt: cutoff } },
        { projection: { _id: 1 } },
      )
      .toArray();
    for (const doc of stale) await this.bucket.delete(doc._id).catch(() => undefined);
    if (stale.length > 0) this.log?.info({ count: stale.length }, 'gridfs: removed uploads cut short by a crash');
  }
}

function toInfo(doc: FileDoc): BlobInfo {
  return {
    key: doc.filename,
    size: doc.length,
    contentType: doc.metadata?.contentType ?? 'application/octet-stream',
    sha256: doc.metadata?.sha256 ?? '',
    storedAt: doc.uploadDate,
  };
}

/**
 * Waits for a download's first bytes: true once it has them (or, for an empty file, its end); false when the file
 * or its chunks were deleted before that (a delete removes the files document, then the chunks: a reader can meet
 * the document alone, whose chunks then end at once). Other failures are thrown. The stream is left paused with
 * what it read.
 */
function started(stream: Readable, length: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const done = (outcome: () => void) => {
      stream.off('readable', onReadable).off('end', onReadable).off('error', onError);
      outcome();
    };
    const onReadable = () => done(() => resolve(stream.readableLength > 0 || length === 0));
    const onError = (err: Error) =>
      done(() => {
        const gone =
          (err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof mongoose.mongo.MongoGridFSChunkError;
        if (gone) resolve(false);
        else reject(err);
      });
    stream.on('readable', onReadable).on('end', onReadable).on('error', onError);
  });
}
