import { PassThrough, type Readable } from 'node:stream';
import type { ImageContentType } from '@estate/contracts/media';
import sharp, { type Metadata, type OutputInfo, type Sharp } from 'sharp';
import type { Rendition } from '../gallery.rules';
import {
  displayedSize,
  LARGE_MAX_SIDE,
  renditionPlan,
  sizeRefusal,
  THUMB_MAX_SIDE,
  type FileFormat,
  type RenditionSpec,
} from '../image.rules';

/**
 * The header says the image is not what it claims, or cannot be read. `message` says so in our
 * words (clients see it); `libraryMessage` is the image library's own, for the log only.
 */
export class UnreadableImageError extends Error {
  constructor(
    message: string,
    readonly libraryMessage?: string,
  ) {
    super(message);
    this.name = 'UnreadableImageError';
  }
}

/** The first line of what the image library threw. */
const libraryText = (err: unknown): string => String((err as Error)?.message ?? err).split('\n')[0];

/** libvips stopped a pipeline past its timeout (it says "timeout: N% complete"). */
const isTimeout = (err: unknown): boolean => /^timeout/i.test(libraryText(err));

/** The header declares a size beyond the limits (a decompression bomb, a strip that stalls decoders, or simply too big). */
export class ImageTooLargeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageTooLargeError';
  }
}

export interface ImageHeader {
  /** As displayed, after EXIF orientation. */
  width: number;
  height: number;
}

export interface Rendered {
  width: number;
  height: number;
}

/** A stored file to read: its bytes, and their number when the store knows it. */
export interface StoredSource {
  stream: Readable;
  size?: number;
}

export interface ImageRendererOptions {
  maxPixels: number;
  /** Pipelines allowed to run at once in this process (each decodes one full image into memory). */
  pipelines: number;
  /** libvips threads per pipeline. */
  threadsPerPipeline: number;
  /** Seconds of work each libvips pipeline of a render may take before it is stopped. */
  renderTimeoutSeconds: number;
}

/** A counting semaphore: at most `size` holders at once, the rest wait in arrival order. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/**
 * The whole of a stored file in one buffer, sized from the store's record when known: the one copy of
 * an upload a render holds (sharp reads it from there without copying it).
 */
async function readAll(stream: Readable, maxBytes: number, size?: number): Promise<Buffer> {
  const fail = () => {
    stream.destroy();
    return new UnreadableImageError(`the stored upload is larger than ${maxBytes} bytes`);
  };
  if (size !== undefined && size > maxBytes) throw fail();
  const chunks: Buffer[] = [];
  let read = 0;
  const into = size !== undefined ? Buffer.allocUnsafe(size) : undefined;
  for await (const chunk of stream) {
    const piece = chunk as Buffer;
    if (read + piece.length > (into?.length ?? maxBytes)) throw fail();
    if (into) piece.copy(into, read);
    else chunks.push(piece);
    read += piece.length;
  }
  return into ? into.subarray(0, read) : Buffer.concat(chunks, read);
}

/**
 * Everything this service does with sharp (libvips). Memory is bounded three ways: the header is
 * checked against a pixel limit before anything is decoded, libvips refuses to decode beyond the
 * same limit (`limitInputPixels`), and at most `pipelines` images are decoded at once, each with
 * `threadsPerPipeline` threads. sharp's operation cache is off: every image is new to it.
 */
export class ImageRendererRepository {
  private readonly gate: Semaphore;

  constructor(private readonly options: ImageRendererOptions) {
    this.gate = new Semaphore(options.pipelines);
    sharp.concurrency(options.threadsPerPipeline);
    sharp.cache(false);
  }

  get maxPixels(): number {
    return this.options.maxPixels;
  }

  /**
   * Reads the header from the first bytes of an upload: type, size and orientation, without
   * decoding pixels. `complete` says whether `head` is the whole file; if not and the header runs
   * past it, resolves null (the caller reads the header from the stored file instead).
   */
  async probe(head: Buffer, declared: ImageContentType, complete: boolean): Promise<ImageHeader | null> {
    let meta: Metadata;
    try {
      // Only the header is parsed here, so the pixel limit is checked by us, with a clear message.
      meta = await sharp(head, { limitInputPixels: false }).metadata();
    } catch (err) {
      if (!complete) return null;
      throw new UnreadableImageError(
        `the file starts like a ${declared === 'image/png' ? 'PNG' : 'JPEG'} image but holds no readable image`,
        libraryText(err),
      );
    }
    const expected = declared === 'image/png' ? 'png' : 'jpeg';
    if (meta.format !== expected || !meta.width || !meta.height) {
      throw new UnreadableImageError(
        `the file starts like a ${expected.toUpperCase()} image but its header cannot be read`,
      );
    }
    const refusal = sizeRefusal(meta.width, meta.height, this.options.maxPixels);
    if (refusal) throw new ImageTooLargeError(refusal);
    return displayedSize(meta.width, meta.height, meta.orientation);
  }

  /** Reads the header of a whole stored file (when it did not fit in the first bytes). */
  async probeStream(source: StoredSource, declared: ImageContentType, maxBytes: number): Promise<ImageHeader> {
    const whole = await this.gate.run(() => readAll(source.stream, maxBytes, source.size));
    return (await this.probe(whole, declared, true))!;
  }

  /**
   * Renders one stored upload (see {@link renderImage}), at most `pipelines` at a time, handing each
   * file to `store` as it is made. A damaged image, or one that takes too long, rejects with
   * {@link UnreadableImageError}.
   */
  async render(
    source: StoredSource,
    contentType: ImageContentType,
    maxBytes: number,
    store: (file: RenditionOutput) => Promise<void>,
  ): Promise<Rendered> {
    const { maxPixels, renderTimeoutSeconds } = this.options;
    return this.gate.run(async () => {
      const input = await readAll(source.stream, maxBytes, source.size);
      try {
        return await renderImage(input, contentType, { maxPixels, timeoutSeconds: renderTimeoutSeconds }, store);
      } catch (err) {
        if (!isTimeout(err)) throw err;
        throw new UnreadableImageError(
          `the image took longer than ${renderTimeoutSeconds} s to process and was given up on`,
          libraryText(err),
        );
      }
    });
  }
}

/** A public file of one image as the renderer makes it: its bytes stream out as they are encoded. */
export interface RenditionOutput {
  rendition: Rendition;
  format: FileFormat;
  contentType: string;
  data: Readable;
}

const CONTENT_TYPES: Record<FileFormat, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/**
 * Makes every public file of an upload (the product's rendition set, {@link renditionPlan}): a
 * full-size copy in the upload's format, and `large` (≤1600²) and `thumb` (≤320², from `large`) as
 * JPEG and WebP, EXIF orientation applied, in sRGB, aspect kept, never upscaled. Outputs carry no
 * metadata (sharp writes none unless asked), so GPS and camera data stay in the private source.
 *
 * The upload (`input`, the one copy held) is decoded once into pixels, and every file is encoded
 * from those pixels (the smaller sizes from `large`'s), one at a time: sharp's `clone()` would decode
 * the upload again per file (and copies a buffer input per clone), which measured 20% more CPU and
 * more memory. Each file streams to `store` as it is encoded, so storing one overlaps encoding the
 * next; resolves once every `store` has. An image that cannot be decoded rejects with
 * {@link UnreadableImageError} (a timeout with the library's "timeout" error); a `store` that fails
 * rejects with its own error.
 */
export async function renderImage(
  input: Buffer,
  contentType: ImageContentType,
  limits: { maxPixels: number; timeoutSeconds: number },
  store: (file: RenditionOutput) => Promise<void>,
): Promise<{ width: number; height: number }> {
  // Every pipeline is bounded in time, so no image holds a render slot for long.
  const vips = (...args: Parameters<typeof sharp>) => sharp(...args).timeout({ seconds: limits.timeoutSeconds });
  const imageErrors: unknown[] = [];
  const stored: Promise<void>[] = [];
  /** Streams one file to the store; resolves when it is encoded (the store may still be writing). */
  const emit = async ({ rendition, format, quality }: RenditionSpec, img: Sharp): Promise<void> => {
    // A JPEG has no alpha: transparent pixels become white (flatten leaves an opaque image as it is).
    const encoded =
      format === 'png'
        ? img.png()
        : format === 'jpeg'
          ? img.flatten({ background: '#ffffff' }).jpeg({ quality })
          : img.webp({ quality });
    const info = new Promise<void>((resolve, reject) => {
      encoded.once('info', () => resolve());
      encoded.once('error', reject);
    });
    // The store reads its own stream, so what sharp's stream fails with is the image's fault, and what the
    // store fails with stays the store's (a store that gives up stops the encoder without blaming the image).
    const data = new PassThrough();
    let abandoned = false;
    encoded.once('error', (err) => {
      if (!abandoned) imageErrors.push(err);
      data.destroy(err);
    });
    data.once('close', () => {
      if (data.readableEnded) return;
      abandoned = true;
      encoded.destroy();
    });
    encoded.pipe(data);
    const writing = store({ rendition, format, contentType: CONTENT_TYPES[format], data });
    stored.push(writing);
    // Marked handled now (a failed write must not crash the process mid-render); settled below.
    for (const p of [writing, info]) p.catch(() => undefined);
    // A store that gives up without reading the stream must not leave the render waiting for it.
    const encodedWhole = await Promise.race([info, writing.then(() => info)]).then(
      () => true,
      () => false,
    );
    // Why is recorded already: the image's failure in imageErrors, the store's in its write.
    if (!encodedWhole) throw new RenderStopped();
  };
  const pixels = (image: { data: Buffer; info: OutputInfo }) =>
    vips(image.data, { raw: { width: image.info.width, height: image.info.height, channels: image.info.channels } });
  const inside = { fit: 'inside', withoutEnlargement: true } as const;
  const [original, ...smaller] = renditionPlan(contentType);
  let size: { width: number; height: number } | undefined;
  try {
    const decoded = await vips(input, { limitInputPixels: limits.maxPixels, failOn: 'error' })
      .rotate()
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    size = { width: decoded.info.width, height: decoded.info.height };
    await emit(original, pixels(decoded));
    // Each smaller size is made from the one before: resizing 12 megapixels once, not twice.
    const large = await pixels(decoded).resize(LARGE_MAX_SIDE, LARGE_MAX_SIDE, inside).raw().toBuffer({
      resolveWithObject: true,
    });
    const thumb = await pixels(large).resize(THUMB_MAX_SIDE, THUMB_MAX_SIDE, inside).raw().toBuffer({
      resolveWithObject: true,
    });
    for (const spec of smaller) await emit(spec, pixels(spec.rendition === 'large' ? large : thumb));
  } catch (err) {
    if (!(err instanceof RenderStopped)) imageErrors.push(err);
  }
  const settled = await Promise.allSettled(stored);
  if (imageErrors.length > 0) throw imageFailure(imageErrors[0], contentType);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return size!;
}

/** A file could not be made or stored; the reason is recorded where the render looks for it. */
class RenderStopped extends Error {}

/** A timeout stays the library's (the caller words it); anything else the pipeline failed with is a damaged image. */
function imageFailure(err: unknown, contentType: ImageContentType): unknown {
  if (isTimeout(err)) return err;
  return new UnreadableImageError(
    `the ${contentType === 'image/png' ? 'PNG' : 'JPEG'} image is damaged or incomplete: its pixels cannot be read`,
    libraryText(err),
  );
}
