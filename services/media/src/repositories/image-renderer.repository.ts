import type { Readable } from 'node:stream';
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
 * full-size copy in the upload's format, and `large` (≤1600²) and `thumb` (≤320²) as JPEG and WebP,
 * EXIF orientation applied, in sRGB, aspect kept, never upscaled. Outputs carry no metadata (sharp
 * writes none unless asked), so GPS and camera data stay in the private source.
 *
 * One sharp pipeline reads the upload (`input`, held once); `clone()`s of it make the full-size
 * copy and the `large` pixels, and clones of those pixels every smaller file, so each size is
 * resized once. Each file is handed to `store` as a stream as soon as its pipeline starts, so
 * encoding and storing overlap; resolves once every `store` has. An image that cannot be decoded
 * rejects with {@link UnreadableImageError} (a timeout with the library's "timeout" error); a
 * `store` that fails rejects with its own error.
 */
export async function renderImage(
  input: Buffer,
  contentType: ImageContentType,
  limits: { maxPixels: number; timeoutSeconds: number },
  store: (file: RenditionOutput) => Promise<void>,
): Promise<{ width: number; height: number }> {
  // Every pipeline is bounded in time, so no image holds a render slot for long.
  const bounded = (img: Sharp) => img.timeout({ seconds: limits.timeoutSeconds });
  const decoded = bounded(
    sharp(input, { limitInputPixels: limits.maxPixels, failOn: 'error' }).rotate().toColourspace('srgb'),
  );
  const imageErrors: unknown[] = [];
  const stored: Promise<void>[] = [];
  const emit = (rendition: Rendition, format: FileFormat, quality: number, img: Sharp): Promise<OutputInfo> => {
    // A JPEG has no alpha: transparent pixels become white (flatten leaves an opaque image as it is).
    const encoded =
      format === 'png'
        ? img.png()
        : format === 'jpeg'
          ? img.flatten({ background: '#ffffff' }).jpeg({ quality })
          : img.webp({ quality });
    const info = new Promise<OutputInfo>((resolve, reject) => {
      encoded.once('info', resolve);
      encoded.once('error', reject);
    });
    // What the pipeline fails with is the image's fault; what the store fails with alone is the store's.
    encoded.once('error', (err) => imageErrors.push(err));
    const writing = store({ rendition, format, contentType: CONTENT_TYPES[format], data: encoded });
    stored.push(writing);
    // A store that gives up without reading the stream must not leave the render waiting for it.
    const done = Promise.race([info, writing.then(() => info)]);
    // Marked handled now (a failed write must not crash the process mid-render); settled below.
    for (const p of [writing, info, done]) p.catch(() => undefined);
    return done;
  };
  const [original] = renditionPlan(contentType);
  const full = emit(original.rendition, original.format, original.quality, decoded.clone());
  let size: { width: number; height: number } | undefined;
  try {
    // Each smaller size is made from the one before: resizing 12 megapixels once, not once per file.
    const large = await decoded
      .clone()
      .resize(LARGE_MAX_SIDE, LARGE_MAX_SIDE, { fit: 'inside', withoutEnlargement: true })
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    const pixels = bounded(
      sharp(large.data, { raw: { width: large.info.width, height: large.info.height, channels: large.info.channels } }),
    );
    const thumb = pixels.clone().resize(THUMB_MAX_SIDE, THUMB_MAX_SIDE, { fit: 'inside', withoutEnlargement: true });
    for (const spec of renditionPlan(contentType).slice(1))
      void emit(spec.rendition, spec.format, spec.quality, (spec.rendition === 'large' ? pixels : thumb).clone());
  } catch (err) {
    imageErrors.push(err);
  }
  try {
    const info = await full;
    size = { width: info.width, height: info.height };
  } catch {
    // Recorded already: the pipeline's failure in imageErrors, the store's in its settled write.
  }
  const settled = await Promise.allSettled(stored);
  if (imageErrors.length > 0) throw imageFailure(imageErrors[0], contentType);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return size!;
}

/** A timeout stays the library's (the caller words it); anything else the pipeline failed with is a damaged image. */
function imageFailure(err: unknown, contentType: ImageContentType): unknown {
  if (isTimeout(err)) return err;
  return new UnreadableImageError(
    `the ${contentType === 'image/png' ? 'PNG' : 'JPEG'} image is damaged or incomplete: its pixels cannot be read`,
    libraryText(err),
  );
}
