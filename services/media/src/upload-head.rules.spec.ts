import { Readable } from 'node:stream';
import { HEADER_BYTES } from './image.rules';
import { EmptyFileError, UnsupportedImageTypeError, UploadHead } from './upload-head.rules';

const JPEG_START = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
const PNG_START = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Streams `chunks` through a fresh UploadHead; what came out, or the error it failed with. */
async function through(chunks: Buffer[]): Promise<{ head: UploadHead; out: Buffer; error?: Error }> {
  const head = new UploadHead();
  const out: Buffer[] = [];
  try {
    for await (const chunk of Readable.from(chunks).pipe(head)) out.push(chunk as Buffer);
  } catch (error) {
    return { head, out: Buffer.concat(out), error: error as Error };
  }
  return { head, out: Buffer.concat(out) };
}

describe('upload head', () => {
  it('passes a JPEG through unchanged, judged from its first bytes however they are chunked', async () => {
    const body = Buffer.concat([JPEG_START, Buffer.alloc(1000, 7)]);
    const { head, out, error } = await through([body.subarray(0, 2), body.subarray(2, 5), body.subarray(5)]);
    expect(error).toBeUndefined();
    expect(head.type).toBe('image/jpeg');
    expect(out.equals(body)).toBe(true);
    expect(head.head().equals(body)).toBe(true);
  });

  it('judges PNG from its signature', async () => {
    const { head, error } = await through([Buffer.concat([PNG_START, Buffer.alloc(50, 1)])]);
    expect(error).toBeUndefined();
    expect(head.type).toBe('image/png');
  });

  it('fails at once on anything else, whatever follows', async () => {
    const { error, out } = await through([Buffer.from('GIF89a-and-more'), Buffer.alloc(1000, 1)]);
    expect(error).toBeInstanceOf(UnsupportedImageTypeError);
    expect(out.length).toBe(0);
  });

  it('decides a file shorter than the longest signature at its end', async () => {
    expect((await through([JPEG_START.subarray(0, 3)])).head.type).toBe('image/jpeg');
    expect((await through([Buffer.from([0xff, 0xd8])])).error).toBeInstanceOf(UnsupportedImageTypeError);
  });

  it('fails an empty file', async () => {
    expect((await through([])).error).toBeInstanceOf(EmptyFileError);
  });

  it('keeps only the first HEADER_BYTES for reading the header', async () => {
    const body = Buffer.concat([JPEG_START, Buffer.alloc(HEADER_BYTES + 10_000, 3)]);
    const { head, out } = await through([body.subarray(0, 100_000), body.subarray(100_000)]);
    expect(out.length).toBe(body.length);
    expect(head.head().equals(body.subarray(0, HEADER_BYTES))).toBe(true);
  });
});
