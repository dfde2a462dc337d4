import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { assertBlobKey, MeasuringStream, type BlobInfo, type BlobStore, type PutOptions } from './blob-store';

/** What the metadata file of a key holds: the commit point of a put. */
interface MetaFile {
  key: string;
  /** Name of the data file (beside the metadata file) holding this content. */
  data: string;
  size: number;
  contentType: string;
  sha256: string;
  storedAt: string;
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException)?.code === 'ENOENT';

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Embedded adapter: files under a folder of the data directory. A key `a/b.jpg` lives in
 * `<dir>/<2 hex of sha256(key)>/` as a metadata file `a%2Fb.jpg~meta.json` naming its data file
 * `a%2Fb.jpg~<uuid>.bin`. A put writes and fsyncs the data file, then atomically renames a new
 * metadata file into place: readers see the old content or the new, never a mix, and a crash
 * before the rename leaves the old blob untouched (plus, at worst, an unreferenced data file).
 * `~` cannot occur in an encoded key, so names never collide, and the fan-out keeps folders small.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private readonly tmp: string;

  private constructor(private readonly dir: string) {
    this.tmp = join(dir, 'tmp');
  }

  /** Creates the folder; leftovers of puts cut short by a crash are cleared. */
  static async open(dir: string): Promise<FsBlobStore> {
    const store = new FsBlobStore(dir);
    await rm(store.tmp, { recursive: true, force: true });
    await mkdir(store.tmp, { recursive: true });
    return store;
  }

  private folderOf(key: string): string {
    return join(this.dir, createHash('sha256').update(key).digest('hex').slice(0, 2));
  }

  private metaPath(key: string): string {
    return join(this.folderOf(key), `${encodeURIComponent(key)}~meta.json`);
  }

  async put(key: string, source: Readable, options: PutOptions): Promise<BlobInfo> {
    assertBlobKey(key);
    const folder = this.folderOf(key);
    const dataName = `${encodeURIComponent(key)}~${randomUUID()}.bin`;
    const staged = join(this.tmp, randomUUID());
    const measure = new MeasuringStream(key, options.maxBytes);
    const stagedMeta = join(this.tmp, randomUUID());
    let meta: MetaFile | undefined;
    let previous: MetaFile | null;
    try {
      // The data file is flushed to disk as it is closed. Its metadata is written and flushed meanwhile, once the
      // last byte has passed through (its size and digest known): both are on disk before either is renamed.
      const writeMeta = async () => {
        await finished(measure);
        meta = {
          key,
          data: dataName,
          size: measure.bytes,
          contentType: options.contentType,
          sha256: measure.digest(),
          storedAt: new Date().toISOString(),
        };
        await writeFile(stagedMeta, JSON.stringify(meta), { flag: 'wx', flush: true });
      };
      // Every step settles before a failure is handled, so that the clean-up finds what they wrote.
      const [written, metaWritten, previousMeta, folderMade] = await Promise.allSettled([
        pipeline(source, measure, createWriteStream(staged, { flags: 'wx', flush: true })),
        writeMeta(),
        this.readMeta(key),
        mkdir(folder, { recursive: true }),
      ]);
      for (const step of [written, metaWritten, previousMeta, folderMade])
        if (step.status === 'rejected') throw step.reason;
      previous = (previousMeta as PromiseFulfilledResult<MetaFile | null>).value;
      await rename(staged, join(folder, dataName));
    } catch (err) {
      await Promise.all([rm(staged, { force: true }), rm(stagedMeta, { force: true })]);
      throw err;
    }
    try {
      await rename(stagedMeta, this.metaPath(key));
      await fsyncPath(folder);
    } catch (err) {
      await rm(stagedMeta, { force: true });
      await rm(join(folder, dataName), { force: true });
      throw err;
    }
    if (previous && previous.data !== dataName) await rm(join(folder, previous.data), { force: true });
    return toInfo(meta!);
  }

  async stat(key: string): Promise<BlobInfo | null> {
    assertBlobKey(key);
    const meta = await this.readMeta(key);
    return meta ? toInfo(meta) : null;
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async get(key: string): Promise<{ info: BlobInfo; stream: Readable } | null> {
    assertBlobKey(key);
    // A put or delete may swap the data file between reading the metadata and opening it: read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const meta = await this.readMeta(key);
      if (!meta) return null;
      try {
        const handle = await open(join(this.folderOf(key), meta.data), 'r');
        return { info: toInfo(meta), stream: handle.createReadStream() };
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    }
    return null;
  }

  async delete(key: string): Promise<boolean> {
    assertBlobKey(key);
    const meta = await this.readMeta(key);
    if (!meta) return false;
    try {
      await unlink(this.metaPath(key));
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
    await rm(join(this.folderOf(key), meta.data), { force: true });
    return true;
  }

  async ping(): Promise<void> {
    await mkdir(this.tmp, { recursive: true });
  }

  async close(): Promise<void> {
    // Nothing is held open between calls.
  }

  private async readMeta(key: string): Promise<MetaFile | null> {
    try {
      return JSON.parse(await readFile(this.metaPath(key), 'utf8')) as MetaFile;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }
}

function toInfo(meta: MetaFile): BlobInfo {
  return {
    key: meta.key,
    size: meta.size,
    contentType: meta.contentType,
    sha256: meta.sha256,
    storedAt: new Date(meta.storedAt),
  };
}
