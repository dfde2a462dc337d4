import { Transform, type TransformCallback } from 'node:stream';
import type { ImageContentType } from '@estate/contracts/media';
import { HEADER_BYTES, MAGIC_BYTES, sniffImageType } from './image.rules';

/** The first bytes are neither JPEG nor PNG. */
export class UnsupportedImageTypeError extends Error {
  constructor() {
    super("only JPEG and PNG images are accepted (judged from the file's bytes, not its declared type)");
    this.name = 'UnsupportedImageTypeError';
  }
}

export class EmptyFileError extends Error {
  constructor() {
    super('the file is empty');
    this.name = 'EmptyFileError';
  }
}

/** The upload stream itself failed (the multipart body cut short or malformed, the client gone): the client's error. */
export class UploadCutShortError extends Error {
  constructor(readonly reason: unknown) {
    super('the upload ended before its file was complete');
    this.name = 'UploadCutShortError';
  }
}

/**
 * Passes an upload through while keeping its first {@link HEADER_BYTES} (for reading the image
 * header afterwards) and judging its type from the first bytes: anything but JPEG or PNG fails
 * the stream at once, so nothing more is read or stored.
 */
export class UploadHead extends Transform {
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  type: ImageContentType | null = null;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.keptBytes < HEADER_BYTES) {
      const piece = chunk.subarray(0, HEADER_BYTES - this.keptBytes);
      this.kept.push(piece);
      this.keptBytes += piece.length;
    }
    if (!this.type && this.keptBytes >= MAGIC_BYTES && !this.judge()) {
      done(new UnsupportedImageTypeError());
      return;
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.keptBytes === 0) done(new EmptyFileError());
    else if (!this.type && !this.judge()) done(new UnsupportedImageTypeError());
    else done();
  }

  /** The kept first bytes. */
  head(): Buffer {
    return Buffer.concat(this.kept);
  }

  private judge(): boolean {
    this.type = sniffImageType(this.head());
    return this.type !== null;
  }
}
