import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '@estate/blobs';
import type { Rendition } from '../gallery.rules';
import type { FileFormat } from '../image.rules';
import type { RenditionOutput, StoredSource } from './image-renderer.repository';

const TOKEN = /^[A-Za-z0-9_-]{22}$/;

/**
 * 128 random bits: a storage key and the secret of keyless public URLs, not an entity id, so not `newId`
 * (whose time prefix would say when the photo was uploaded).
 */
export function newFileToken(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * The files of one image under its token: the upload as received (`source`, never served: it
 * may carry GPS and other metadata) and the renditions the worker makes from it.
 */
function keyOf(token: string, name: string): string {
  return `media/${token}/${name}`;
}

const renditionName = (rendition: Rendition, format: FileFormat) =>
  rendition === 'original' ? 'original' : `${rendition}.${format}`;

/** Every name a token's files may have, for deleting them all. */
const ALL_NAMES = ['source', 'original', 'large.jpeg', 'large.webp', 'thumb.jpeg', 'thumb.webp'];

/** The files of every image, in the blob store. */
export class MediaFilesRepository {
  constructor(private readonly blobs: BlobStore) {}

  /** Streams an upload in; `maxBytes` cuts it off (BlobTooLargeError) without storing anything. */
  putSource(token: string, source: Readable, contentType: string, maxBytes: number): Promise<BlobInfo> {
    return this.blobs.put(keyOf(token, 'source'), source, { contentType, maxBytes });
  }

  /** The stored upload as a stream, with its size; null when it is gone. */
  async readSource(token: string): Promise<StoredSource | null> {
    const blob = await this.blobs.get(keyOf(token, 'source'));
    return blob ? { stream: blob.stream, size: blob.info.size } : null;
  }

  /** Streams a rendition into the store as the renderer encodes it. */
  async putRendition(token: string, file: RenditionOutput): Promise<void> {
    await this.blobs.put(keyOf(token, renditionName(file.rendition, file.format)), file.data, {
      contentType: file.contentType,
    });
  }

  /** A public file: `original` in its own format; `large` and `thumb` as JPEG, or WebP when asked. */
  async open(
    token: string,
    rendition: Rendition,
    format: 'jpeg' | 'webp' = 'jpeg',
  ): Promise<{ info: BlobInfo; stream: Readable } | null> {
    if (!TOKEN.test(token) || (rendition === 'original' && format === 'webp')) return null;
    return this.blobs.get(keyOf(token, renditionName(rendition, format)));
  }

  /** Removes every file of the token (idempotent). */
  async deleteAll(token: string): Promise<void> {
    for (const name of ALL_NAMES) await this.blobs.delete(keyOf(token, name));
  }

  ping(): Promise<void> {
    return this.blobs.ping();
  }
}
