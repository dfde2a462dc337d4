import { PassThrough, type Readable } from 'node:stream';
import type { ImageContentType } from '@estate/contracts/media';
import sharp, { type Metadata, type Sharp } from 'sharp';
import type { Rendition } from '../gallery.rules';
import { displayedSize, sizeRefusal, type FileFormat, type RenditionSpec } from '../image.rules';
import { RenderThreads, type FileSink } from './render-thread';
import { makeRenditions, renditionRecipe } from './rendition-pipeline';

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
  private readonly threads = new RenderThreads();

  constructor(private readonly options: ImageRendererOptions) {
    this.gate = new Semaphore(options.pipelines);
    sharp.concurrency(options.threadsPerPipeline);
    sharp.cache(false);
  }

  /** Ends the render threads (a render still running rejects with RenderThreadLost); the next render starts one. */
  stop(): Promise<void> {
    return this.threads.stop();
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
   * Renders one stored upload in a render thread (the files of {@link renderImage}), at most `pipelines` at a time,
   * handing each file to `store` as it is made. A damaged image, or one that takes too long, rejects with
   * {@link UnreadableImageError}; a thread that stops mid-render, with RenderThreadLost.
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
      const deliveries = new Deliveries(store, contentType);
      const recipe = renditionRecipe(contentType, { maxPixels, timeoutSeconds: renderTimeoutSeconds });
      const size = await this.threads.render(input, recipe, deliveries);
      try {
        await deliveries.settle();
      } catch (err) {
        if (!isTimeout(err)) throw err;
        throw new UnreadableImageError(
          `the image took longer than ${renderTimeoutSeconds} s to process and was given up on`,
          libraryText(err),
        );
      }
      return size!;
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
 * The files of one render on their way to the store: each file's stream is handed to `store` as it is encoded, and
 * what went wrong is kept, the image's failure before a store's.
 */
class Deliveries implements FileSink {
  private readonly imageErrors: unknown[] = [];
  private readonly writes: Promise<void>[] = [];

  constructor(
    private readonly store: (file: RenditionOutput) => Promise<void>,
    private readonly contentType: ImageContentType,
  ) {}

  open({ rendition, format }: RenditionSpec, data: Readable): Promise<void> {
    const writing = this.store({ rendition, format, contentType: CONTENT_TYPES[format], data });
    // Marked handled now (a failed write must not crash the process mid-render); settled below.
    writing.catch(() => undefined);
    this.writes.push(writing);
    return writing;
  }

  imageFailed(err: unknown): void {
    this.imageErrors.push(err);
  }

  /** Resolves once every write has; rejects with the image's failure, else with the first store's. */
  async settle(): Promise<void> {
    const settled = await Promise.allSettled(this.writes);
    if (this.imageErrors.length > 0) throw imageFailure(this.imageErrors[0], this.contentType);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/**
 * Makes every public file of an upload ({@link makeRenditions}) in this thread, each streamed to `store` as it is
 * encoded, so that storing one overlaps encoding the next; resolves once every `store` has. An image that cannot be
 * decoded rejects with {@link UnreadableImageError} (a timeout with the library's "timeout" error); a `store` that
 * fails rejects with its own error. The service renders the same way in a render thread
 * ({@link ImageRendererRepository.render}); this is the pipeline on its own.
 */
export async function renderImage(
  input: Buffer,
  contentType: ImageContentType,
  limits: { maxPixels: number; timeoutSeconds: number },
  store: (file: RenditionOutput) => Promise<void>,
): Promise<{ width: number; height: number }> {
  const deliveries = new Deliveries(store, contentType);
  /** Streams one file to the store; resolves when it is encoded (the store may still be writing). */
  const output = async (spec: RenditionSpec, encoded: Sharp): Promise<void> => {
    const info = new Promise<void>((resolve, reject) => {
      encoded.once('info', () => resolve());
      encoded.once('error', reject);
    });
    // The store reads its own stream, so what sharp's stream fails with is the image's fault, and what the
    // store fails with stays the store's (a store that gives up stops the encoder without blaming the image).
    const data = new PassThrough();
    let abandoned = false;
    encoded.once('error', (err) => {
      if (!abandoned) deliveries.imageFailed(err);
      data.destroy(err);
    });
    data.once('close', () => {
      if (data.readableEnded) return;
      abandoned = true;
      encoded.destroy();
    });
    encoded.pipe(data);
    const writing = deliveries.open(spec, data);
    info.catch(() => undefined);
    // A store that gives up without reading the stream must not leave the render waiting for it.
    const encodedWhole = await Promise.race([info, writing.then(() => info)]).then(
      () => true,
      () => false,
    );
    // Why is recorded already: the image's failure in deliveries, the store's in its write.
    if (!encodedWhole) throw new RenderStopped();
  };
  let size: { width: number; height: number } | undefined;
  try {
    size = await makeRenditions(sharp, input, renditionRecipe(contentType, limits), output);
  } catch (err) {
    if (!(err instanceof RenderStopped)) deliveries.imageFailed(err);
  }
  await deliveries.settle();
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
