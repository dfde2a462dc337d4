import type { Readable } from 'node:stream';
import type { ImageContentType } from '@estate/contracts/media';
import sharp, { type Metadata, type OutputInfo, type Sharp } from 'sharp';
import {
  displayedSize,
  JPEG_QUALITY,
  LARGE_MAX_SIDE,
  ORIGINAL_JPEG_QUALITY,
  sizeRefusal,
  THUMB_MAX_SIDE,
  WEBP_QUALITY,
} from '../image.rules';
import type { RenderedFile } from './media-files.repository';

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
  files: RenderedFile[];
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

async function readAll(stream: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      stream.destroy();
      throw new UnreadableImageError(`the stored upload is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
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
  async probeStream(source: Readable, declared: ImageContentType, maxBytes: number): Promise<ImageHeader> {
    const whole = await this.gate.run(() => readAll(source, maxBytes));
    return (await this.probe(whole, declared, true))!;
  }

  /** Renders one stored upload (see {@link renderImage}), at most `pipelines` at a time. */
  async render(
    source: Readable,
    contentType: ImageContentType,
    maxBytes: number,
    store?: (file: RenderedFile) => Promise<void>,
  ): Promise<Rendered> {
    const { maxPixels, renderTimeoutSeconds } = this.options;
    return this.gate.run(async () => {
      const input = await readAll(source, maxBytes);
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

/**
 * Decodes an upload once (EXIF orientation applied, converted to sRGB) and makes every public
 * file from those pixels: a full-size copy in the upload's format, and `large` (≤1600²) and
 * `thumb` (≤320²) as JPEG and WebP, aspect kept, never upscaled. Outputs carry no metadata
 * (sharp writes none unless asked), so GPS and camera data stay in the private source.
 * `store`, when given, receives each file as soon as it is encoded, so writing one overlaps
 * encoding the next; the result resolves once every `store` has.
 */
async function renderImage(
  input: Buffer,
  contentType: ImageContentType,
  limits: { maxPixels: number; timeoutSeconds: number },
  store?: (file: RenderedFile) => Promise<void>,
): Promise<Rendered> {
  // Every pipeline is bounded in time, so no image holds a render slot for long.
  const vips = (...args: Parameters<typeof sharp>) => sharp(...args).timeout({ seconds: limits.timeoutSeconds });
  let decoded: { data: Buffer; info: OutputInfo };
  try {
    decoded = await vips(input, { limitInputPixels: limits.maxPixels, failOn: 'error' })
      .rotate()
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    if (isTimeout(err)) throw err;
    throw new UnreadableImageError(
      `the ${contentType === 'image/png' ? 'PNG' : 'JPEG'} image is damaged or incomplete: its pixels cannot be read`,
      libraryText(err),
    );
  }
  const { data, info } = decoded;
  const raw = { raw: { width: info.width, height: info.height, channels: info.channels } };
  const jpeg = (img: Sharp, quality: number) =>
    (info.channels === 4 ? img.flatten({ background: '#ffffff' }) : img).jpeg({ quality });
  const files: RenderedFile[] = [];
  const stored: Promise<void>[] = [];
  const emit = (file: RenderedFile) => {
    files.push(file);
    if (!store) return;
    const writing = store(file);
    // Marked handled now (a failed write must not crash the process mid-render); awaited below.
    writing.catch(() => undefined);
    stored.push(writing);
  };
  emit(
    contentType === 'image/png'
      ? {
          rendition: 'original',
          format: 'png',
          contentType: 'image/png',
          data: await vips(data, raw).png().toBuffer(),
        }
      : {
          rendition: 'original',
          format: 'jpeg',
          contentType: 'image/jpeg',
          data: await jpeg(vips(data, raw), ORIGINAL_JPEG_QUALITY).toBuffer(),
        },
  );
  // Each smaller size is made from the one before: resizing 12 megapixels once, not twice.
  const large = await vips(data, raw)
    .resize(LARGE_MAX_SIDE, LARGE_MAX_SIDE, { fit: 'inside', withoutEnlargement: true })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const largeRaw = { raw: { width: large.info.width, height: large.info.height, channels: large.info.channels } };
  const thumb = await vips(large.data, largeRaw)
    .resize(THUMB_MAX_SIDE, THUMB_MAX_SIDE, { fit: 'inside', withoutEnlargement: true })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const thumbRaw = { raw: { width: thumb.info.width, height: thumb.info.height, channels: thumb.info.channels } };
  for (const [rendition, pixels, shape] of [
    ['large', large.data, largeRaw],
    ['thumb', thumb.data, thumbRaw],
  ] as const) {
    emit({
      rendition,
      format: 'jpeg',
      contentType: 'image/jpeg',
      data: await jpeg(vips(pixels, shape), JPEG_QUALITY).toBuffer(),
    });
    emit({
      rendition,
      format: 'webp',
      contentType: 'image/webp',
      data: await vips(pixels, shape).webp({ quality: WEBP_QUALITY }).toBuffer(),
    });
  }
  await Promise.all(stored);
  return { width: info.width, height: info.height, files };
}
