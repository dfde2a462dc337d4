import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { BlobTooLargeError, InvalidBlobKeyError, type BlobStore } from '../src/blob-store';

export interface BlobHarness {
  /** A store over fresh, empty data. */
  open(): Promise<BlobStore>;
  /** A second store instance over the same data as the last `open()` (a restart). */
  reopen(): Promise<BlobStore>;
  cleanup?(): Promise<void>;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A source that yields `total` bytes in `chunk`-sized pieces, generated as it is read (never one buffer). */
function generated(total: number, chunk = 64 * 1024, seed = 7): { stream: Readable; digest: () => string } {
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const n = Math.min(chunk, total - sent);
      const piece = Buffer.alloc(n, (sent / chunk + seed) & 0xff);
      piece.writeUInt32BE(sent >>> 0, 0);
      hash.update(piece);
      sent += n;
      this.push(piece);
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

/** A source that yields some bytes and then fails, like an upload whose client went away. */
function failingAfter(bytes: number): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(randomBytes(bytes));
      } else {
        this.destroy(new Error('client went away'));
      }
    },
  });
}

/** The behaviour every blob-store adapter must show. */
export function blobStoreContract(name: string, harness: () => BlobHarness) {
  describe(`blob store contract: ${name}`, () => {
    let h: BlobHarness;
    let store: BlobStore;
    const key = (leaf = 'original') => `t${randomUUID().slice(0, 8)}/${leaf}`;

    beforeEach(async () => {
      h = harness();
      store = await h.open();
    });
    afterEach(async () => {
      await store.close();
      await h.cleanup?.();
    });

    it('stores a stream and gives back the same bytes with content type, size and sha256', async () => {
      const k = key('photo.jpg');
      const bytes = randomBytes(300_000);
      const info = await store.put(k, Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]), {
        contentType: 'image/jpeg',
      });
      expect(info).toMatchObject({ key: k, size: bytes.length, contentType: 'image/jpeg', sha256: sha(bytes) });
      expect(info.storedAt).toBeInstanceOf(Date);
      const got = await store.get(k);
      expect(got).not.toBeNull();
      expect(got!.info).toEqual(info);
      expect((await readAll(got!.stream)).equals(bytes)).toBe(true);
      expect(await store.stat(k)).toEqual(info);
      expect(await store.exists(k)).toBe(true);
    });

    it('streams a blob larger than its chunks in and out (11 MB), with the digest of what went in', async () => {
      const k = key();
      const source = generated(11 * 1024 * 1024);
      const info = await store.put(k, source.stream, { contentType: 'application/octet-stream' });
      expect(info.size).toBe(11 * 1024 * 1024);
      expect(info.sha256).toBe(source.digest());
      const got = await store.get(k);
      const hash = createHash('sha256');
      let chunks = 0;
      let size = 0;
      for await (const c of got!.stream) {
        hash.update(c as Buffer);
        size += (c as Buffer).length;
        chunks++;
      }
      expect(size).toBe(info.size);
      expect(hash.digest('hex')).toBe(info.sha256);
      expect(chunks).toBeGreaterThan(1);
    });

    it('stores an empty blob', async () => {
      const k = key();
      const info = await store.put(k, Readable.from([]), { contentType: 'text/plain' });
      expect(info.size).toBe(0);
      expect((await readAll((await store.get(k))!.stream)).length).toBe(0);
    });

    it('answers null / false for a key that was never stored', async () => {
      const k = key();
      expect(await store.get(k)).toBeNull();
      expect(await store.stat(k)).toBeNull();
      expect(await store.exists(k)).toBe(false);
      expect(await store.delete(k)).toBe(false);
    });

    it('deletes: gone for every reader, and a second delete finds nothing', async () => {
      const k = key();
      await store.put(k, Readable.from([Buffer.from('bytes')]), { contentType: 'text/plain' });
      expect(await store.delete(k)).toBe(true);
      expect(await store.get(k)).toBeNull();
      expect(await store.exists(k)).toBe(false);
      expect(await store.delete(k)).toBe(false);
    });

    it('keeps keys apart: neighbours, prefixes and look-alike names are different blobs', async () => {
      const base = `t${randomUUID().slice(0, 8)}`;
      const keys = [`${base}/a`, `${base}/a.json`, `${base}/ab`, `${base}/a/b`, `${base}-a`];
      for (const k of keys) await store.put(k, Readable.from([Buffer.from(k)]), { contentType: 'text/plain' });
      for (const k of keys) expect((await readAll((await store.get(k))!.stream)).toString()).toBe(k);
      await store.delete(`${base}/a`);
      expect(await store.exists(`${base}/a`)).toBe(false);
      expect(await store.exists(`${base}/a/b`)).toBe(true);
      expect(await store.exists(`${base}/a.json`)).toBe(true);
    });

    it('replaces the content of a key: readers get the new bytes, type and digest', async () => {
      const k = key();
      await store.put(k, Readable.from([Buffer.from('first version')]), { contentType: 'text/plain' });
      const second = await store.put(k, Readable.from([Buffer.from('second')]), { contentType: 'image/png' });
      expect(second).toMatchObject({ size: 6, contentType: 'image/png', sha256: sha(Buffer.from('second')) });
      expect((await readAll((await store.get(k))!.stream)).toString()).toBe('second');
      expect(await store.delete(k)).toBe(true);
      expect(await store.exists(k)).toBe(false);
    });

    it('leaves nothing behind when the source fails midway, and keeps an existing blob intact', async () => {
      const fresh = key();
      await expect(store.put(fresh, failingAfter(200_000), { contentType: 'image/jpeg' })).rejects.toThrow(
        'client went away',
      );
      expect(await store.exists(fresh)).toBe(false);

      const kept = key();
      await store.put(kept, Readable.from([Buffer.from('keep me')]), { contentType: 'text/plain' });
      await expect(store.put(kept, failingAfter(200_000), { contentType: 'image/jpeg' })).rejects.toThrow(
        'client went away',
      );
      const got = await store.get(kept);
      expect(got!.info.contentType).toBe('text/plain');
      expect((await readAll(got!.stream)).toString()).toBe('keep me');
    });

    it('cuts a source off at maxBytes with BlobTooLargeError, reading no further, and stores nothing', async () => {
      const k = key();
      const source = generated(5 * 1024 * 1024);
      let read = 0;
      source.stream.on('data', (c: Buffer) => (read += c.length));
      await expect(
        store.put(k, source.stream, { contentType: 'image/jpeg', maxBytes: 1024 * 1024 }),
      ).rejects.toBeInstanceOf(BlobTooLargeError);
      expect(read).toBeLessThan(2 * 1024 * 1024);
      expect(await store.exists(k)).toBe(false);
      const exact = key();
      expect(
        (await store.put(exact, generated(1024 * 1024).stream, { contentType: 'image/jpeg', maxBytes: 1024 * 1024 }))
          .size,
      ).toBe(1024 * 1024);
    });

    it('refuses keys that are not safe relative paths', async () => {
      for (const bad of ['', '/abs', 'a//b', '../x', 'a/../b', 'a/./b', 'sp ace', 'a\\b', 'ü', 'x'.repeat(201)]) {
        await expect(
          store.put(bad, Readable.from([Buffer.from('x')]), { contentType: 'text/plain' }),
        ).rejects.toBeInstanceOf(InvalidBlobKeyError);
        await expect(store.get(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      }
    });

    it('handles concurrent puts of different keys', async () => {
      const entries = Array.from({ length: 12 }, (_, i) => ({ k: key(`n${i}`), bytes: randomBytes(50_000 + i) }));
      await Promise.all(entries.map((e) => store.put(e.k, Readable.from([e.bytes]), { contentType: 'image/png' })));
      for (const e of entries) expect((await store.stat(e.k))!.sha256).toBe(sha(e.bytes));
    });

    it('keeps what it stored across a restart', async () => {
      const k = key();
      const bytes = randomBytes(70_000);
      const info = await store.put(k, Readable.from([bytes]), { contentType: 'image/jpeg' });
      await store.close();
      store = await h.reopen();
      expect(await store.stat(k)).toEqual(info);
      expect((await readAll((await store.get(k))!.stream)).equals(bytes)).toBe(true);
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
