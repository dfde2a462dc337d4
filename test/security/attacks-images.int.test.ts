import { Writable } from 'node:stream';
import { createLogger } from '@estate/platform/logging';
import { eventually } from '@estate/testing';
import sharp from 'sharp';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

/** A multipart body of image files, as a browser would send it. */
async function multipart(files: Buffer[]): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const form = new FormData();
  for (const f of files) form.append('file', new Blob([f], { type: 'image/jpeg' }), 'photo.jpg');
  const encoded = new Response(form);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

const jpeg = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#3a6' } })
    .jpeg()
    .toBuffer();

/** CRC-32 of PNG chunks. */
function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

/** A PNG that declares its size and stops after its header: what the size check reads. */
function pngHeader(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** What the words of the image library look like in a message. */
const LIBRARY_WORDS = /vips|jpeg datastream|libjpeg|libpng|spng|sharp|premature end|marker/i;

describe('attacks through uploaded images', () => {
  let t: Target;
  const logged: string[] = [];
  beforeEach(async () => {
    logged.length = 0;
    const destination = new Writable({
      write(chunk, _enc, done) {
        logged.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    t = await startTarget({ logLevel: 'info' }, undefined, createLogger({ service: 'embedded', destination }));
  });
  afterEach(() => t.close());

  const media = async (listingId: string, key = ADMIN) =>
    (await t.call(key, 'GET', `/v1/listings/${listingId}/media?limit=100`)).json().items as Array<{
      id: string;
      status: string;
      failureReason: string | null;
    }>;

  let big: Buffer;
  beforeAll(async () => {
    big = await jpeg(5000, 5000);
  });

  it('an image too wide, too tall or too narrow for a photo is 422 before decoding, naming the limit', async () => {
    const listing = await t.listing(ADMIN);
    const bodies: Array<[Buffer, RegExp]> = [
      // The header of a 1 × 49,000,000 PNG (the whole file is about 95 KB, under the pixel limit; it decoded for 37 s).
      [pngHeader(1, 49_000_000), /height may be at most/],
      [await jpeg(30_000, 10), /width may be at most/],
      [await jpeg(10, 30_000), /height may be at most/],
      [await jpeg(12_000, 200), /aspect ratio may be at most/],
      [await jpeg(200, 12_000), /aspect ratio may be at most/],
    ];
    for (const [bytes, limit] of bodies) {
      const upload = await multipart([bytes]);
      const res = await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, upload.payload, upload.headers);
      expectProblem(res, 422, 'image_too_large');
      expect(res.json().detail).toMatch(limit);
      expect(res.json().detail).toMatch(/\d/);
    }
    expect(await media(listing.id)).toEqual([]);
    // A real panorama and a tall phone photo are fine.
    const fine = await multipart([await jpeg(6000, 1000), await jpeg(1000, 3000)]);
    expect(
      (await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, fine.payload, fine.headers)).statusCode,
    ).toBe(201);
  });

  it('a truncated multipart body is 400 problem+json, logged as the client error it is, and nothing is stored', async () => {
    const listing = await t.listing(ADMIN);
    const whole = await multipart([await jpeg(64, 64), await jpeg(64, 64)]);
    for (const cut of [whole.payload.length - 60, Math.floor(whole.payload.length / 2), 300]) {
      const res = await t.call(
        ADMIN,
        'POST',
        `/v1/listings/${listing.id}/media`,
        whole.payload.subarray(0, cut),
        whole.headers,
      );
      expect({ cut, status: res.statusCode }).toEqual({ cut, status: 400 });
      expectProblem(res, 400, 'malformed_request');
      expect(res.body).not.toMatch(/terminated|busboy|stack/i);
    }
    expect(await media(listing.id)).toEqual([]);
    const lines = logged.map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    // The slots the refused files held are free again: the listing still takes a full gallery's first image.
    const one = await multipart([await jpeg(8, 8)]);
    expect((await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, one.payload, one.headers)).statusCode).toBe(
      201,
    );
  });

  it("a corrupt image's refusal and failure say what is wrong in our words; the library's words go to the log only", async () => {
    const listing = await t.listing(ADMIN);
    const good = await jpeg(64, 64);
    const corrupt = [
      // Starts like a JPEG, has no image.
      Buffer.concat([good.subarray(0, 3), Buffer.from([0xd9])]),
      Buffer.concat([good.subarray(0, 20), Buffer.alloc(200, 0)]),
      // Starts like a PNG, nothing after the signature.
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    ];
    for (const bytes of corrupt) {
      const upload = await multipart([bytes]);
      const res = await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, upload.payload, upload.headers);
      expectProblem(res, 422, 'image_corrupt');
      expect(res.json().detail).not.toMatch(LIBRARY_WORDS);
      expect(res.json().detail).toMatch(/JPEG|PNG/);
    }
    // A file whose header reads well and whose pixels do not: it fails in processing, in our words too.
    const truncated = good.subarray(0, Math.floor(good.length * 0.6));
    const upload = await multipart([truncated]);
    const res = await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, upload.payload, upload.headers);
    if (res.statusCode === 201) {
      const failed = await eventually(async () => {
        const [item] = await media(listing.id);
        expect(item.status).toBe('failed');
        return item;
      });
      expect(failed.failureReason).not.toMatch(LIBRARY_WORDS);
      expect(failed.failureReason).toMatch(/JPEG|image/);
    } else {
      expectProblem(res, 422, 'image_corrupt');
      expect(res.json().detail).not.toMatch(LIBRARY_WORDS);
    }
    // The library's words are in the log, for whoever runs the product.
    expect(logged.join('\n')).toMatch(LIBRARY_WORDS);
  });

  it("one account's queue of slow renders holds up another account's photo by at most the render in progress", async () => {
    const flooded = await t.listing(ADMIN);
    const rival = await t.newAccount();
    const small = await t.listing(rival.admin);
    // Slow to render (25 megapixels each), quick to send (a flat colour compresses to almost nothing).
    const slow = await multipart(Array.from({ length: 6 }, () => null).map(() => big));
    const queued = await t.call(ADMIN, 'POST', `/v1/listings/${flooded.id}/media`, slow.payload, slow.headers);
    expect(queued.statusCode).toBe(201);
    const photo = await multipart([await jpeg(64, 48)]);
    const mine = await t.call(rival.admin, 'POST', `/v1/listings/${small.id}/media`, photo.payload, photo.headers);
    expect(mine.statusCode).toBe(201);

    await eventually(async () => expect((await media(small.id, rival.admin))[0].status).toBe('ready'), {
      timeoutMs: 60_000,
    });
    // First come, first served would have rendered all six first; taking turns, at most the one in
    // progress when the photo arrived (and the one that began as it finished) are done.
    const states = (await media(flooded.id)).map((m) => m.status);
    expect(states.filter((s) => s === 'processing').length).toBeGreaterThanOrEqual(4);
    await eventually(
      async () => expect((await media(flooded.id)).map((m) => m.status)).toEqual(Array(6).fill('ready')),
      {
        timeoutMs: 120_000,
      },
    );
  }, 180_000);
});
