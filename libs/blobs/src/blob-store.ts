import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

/**
 * The blob-store port: named byte streams with a content type. Files under the data folder in
 * the embedded profile, MongoDB GridFS in the distributed one. Bytes go in and out as streams,
 * so no adapter holds a whole blob in memory.
 *
 * Keys are relative paths of `[A-Za-z0-9_.-]` segments joined by `/` (no empty, `.` or `..`
 * segment), at most 200 characters.
 */
export interface BlobInfo {
  key: string;
  /** Bytes stored. */
  size: number;
  contentType: string;
  /** sha256 of the content (hex): equal content, equal digest; an HTTP ETag can be made from it. */
  sha256: string;
  /** When this content was stored. */
  storedAt: Date;
}

export interface PutOptions {
  contentType: string;
  /** A source longer than this fails the put with {@link BlobTooLargeError}; nothing is kept. */
  maxBytes?: number;
}

export interface BlobStore {
  readonly kind: 'fs' | 'gridfs';
  /**
   * Stores the stream under `key`, replacing what was there, and resolves once the bytes are
   * durable. If the source fails (or is longer than `maxBytes`) the put rejects and neither a
   * partial blob nor any change to an existing one is left behind.
   */
  put(key: string, source: Readable, options: PutOptions): Promise<BlobInfo>;
  /** The blob's metadata, or null when there is none. */
  stat(key: string): Promise<BlobInfo | null>;
  exists(key: string): Promise<boolean>;
  /** The blob's metadata and a stream of its bytes, or null when there is none. */
  get(key: string): Promise<{ info: BlobInfo; stream: Readable } | null>;
  /** Resolves to true when something was removed. */
  delete(key: string): Promise<boolean>;
  /** Resolves when the store answers; rejects otherwise (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class BlobTooLargeError extends Error {
  constructor(
    readonly key: string,
    readonly maxBytes: number,
  ) {
    super(`blob ${key} is larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string) {
    super(`not a valid blob key: ${JSON.stringify(key.slice(0, 80))}`);
    this.name = 'InvalidBlobKeyError';
  }
}

const SEGMENT = /^[A-Za-z0-9_.-]+$/;
const MAX_KEY_LENGTH = 200;

/** Throws {@link InvalidBlobKeyError} unless `key` is a safe relative path (see the port). */
export function assertBlobKey(key: string): void {
  const ok =
    typeof key === 'string' &&
    key.length > 0 &&
    key.length <= MAX_KEY_LENGTH &&
    key.split('/').every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
  if (!ok) throw new InvalidBlobKeyError(key);
}

/**
 * A pass-through that counts and hashes what flows through it, and fails once more than
 * `maxBytes` went by, so an adapter learns size and digest without a second read.
 */
export class MeasuringStream extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;

  constructor(
    private readonly key: string,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(new BlobTooLargeError(this.key, this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }

  /** The hex digest; call once the stream has ended. */
  digest(): string {
    return this.hash.digest('hex');
  }
}
