import { finished, type Readable } from 'node:stream';
import { BlobTooLargeError, type BlobInfo } from '@estate/blobs';
import type { OutboxRelay } from '@estate/bus';
import { MAX_IMAGE_BYTES, MAX_IMAGES_PER_LISTING, type ImageContentType, type Media } from '@estate/contracts/media';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import type { Logger } from 'pino';
import { changedEvent, hasRoomForImages, shownMedia, withOnePrimary, type MediaItem } from './gallery.rules';
import { ownedBy, WRITERS, type GalleryService } from './gallery.service';
import type { GalleryRepository } from './repositories/gallery.repository';
import {
  ImageTooLargeError,
  UnreadableImageError,
  type ImageRendererRepository,
} from './repositories/image-renderer.repository';
import { newFileToken, type MediaFilesRepository } from './repositories/media-files.repository';
import type { TrashService } from './trash.service';
import { EmptyFileError, UnsupportedImageTypeError, UploadCutShortError, UploadHead } from './upload-head.rules';
import type { RenditionQueue } from './workers/rendition.worker';

export interface UploadDeps {
  galleries: GalleryRepository;
  files: MediaFilesRepository;
  images: ImageRendererRepository;
  trash: TrashService;
  queue: RenditionQueue;
  /** Finds the caller's listing (waiting a moment for one this service has not heard of yet). */
  gallery: Pick<GalleryService, 'ownedGallery'>;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

export const CUT_SHORT = 'The multipart body is cut short or malformed; send the whole form again';

/** Turns what an upload can fail with into the answer the client gets. */
function uploadFailure(err: unknown): unknown {
  if (err instanceof UnsupportedImageTypeError) return new AppError('unsupported_media_type', err.message);
  if (err instanceof EmptyFileError) return new AppError('image_corrupt', 'The file is empty');
  if (err instanceof UploadCutShortError) return new AppError('malformed_request', CUT_SHORT);
  if (err instanceof UnreadableImageError) return new AppError('image_corrupt', capitalised(err.message));
  if (err instanceof ImageTooLargeError)
    return new AppError('image_too_large', `The image is refused before decoding: ${err.message}`);
  if (err instanceof BlobTooLargeError)
    return new AppError('payload_too_large', `A file may be at most ${MAX_IMAGE_BYTES / 1024 / 1024} MB`);
  return err;
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Photo uploads: multipart requests whose files stream in one by one and are committed together. */
export class UploadService {
  constructor(private readonly deps: UploadDeps) {}

  /** Starts a multipart upload to the caller's listing (403 for readers, 404 for a listing not theirs). */
  async begin(ctx: RequestContext, listingId: string): Promise<UploadSession> {
    assertRole(ctx.who, WRITERS, 'add media');
    await this.deps.gallery.ownedGallery(ctx.who, listingId, ctx.requestId);
    return new UploadSession(this.deps, ctx, listingId);
  }
}

interface Upload {
  item: MediaItem;
  token: string;
  captioned: boolean;
  caption?: string;
  stored?: { info: BlobInfo; contentType: ImageContentType; width: number; height: number };
}

/**
 * One multipart request: each file reserves its slot (so the 50-image limit holds across
 * concurrent requests and replicas), streams into the blob store through the type check, and has
 * its header read; `commit` then makes every file of the request visible in one write, queues
 * their renditions and publishes one event. Any failure `abort`s: nothing of the request stays.
 */
export class UploadSession {
  private readonly uploads: Upload[] = [];

  constructor(
    private readonly deps: UploadDeps,
    private readonly ctx: RequestContext,
    private readonly listingId: string,
  ) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  get fileCount(): number {
    return this.uploads.length;
  }

  async addFile(stream: Readable): Promise<void> {
    const upload = await this.reserve();
    this.uploads.push(upload);
    const head = new UploadHead();
    let info: BlobInfo;
    try {
      // The source blob's type is provisional: it is only ever read back by the worker.
      info = await this.deps.files.putSource(
        upload.token,
        throughHead(stream, head),
        'application/octet-stream',
        MAX_IMAGE_BYTES,
      );
    } catch (err) {
      throw uploadFailure(err);
    }
    const contentType = head.type!;
    try {
      const header =
        (await this.deps.images.probe(head.head(), contentType, info.size <= head.head().length)) ??
        (await this.deps.images.probeStream(
          (await this.deps.files.readSource(upload.token))!,
          contentType,
          MAX_IMAGE_BYTES,
        ));
      upload.stored = { info, contentType, ...header };
    } catch (err) {
      // The image library's own words are for whoever runs the product, never for the client.
      if (err instanceof UnreadableImageError && err.libraryMessage)
        this.deps.log.info(
          { requestId: this.ctx.requestId, listingId: this.listingId, reason: err.libraryMessage },
          'upload refused: unreadable image',
        );
      throw uploadFailure(err);
    }
  }

  /** The caption part that follows a file belongs to that file. */
  setCaption(text: string): void {
    const last = this.uploads[this.uploads.length - 1];
    if (!last)
      throw new AppError('validation_failed', 'A caption must follow the file it describes', {
        errors: [{ path: 'caption', message: 'must come after a file part' }],
      });
    if (last.captioned)
      throw new AppError('validation_failed', 'A file has two captions', {
        errors: [{ path: 'caption', message: 'only one caption per file' }],
      });
    last.captioned = true;
    last.caption = text.trim() || undefined;
  }

  async commit(): Promise<Media[]> {
    if (this.uploads.length === 0) {
      throw new AppError('validation_failed', 'Send at least one file part named `file`', {
        errors: [{ path: 'file', message: 'is required' }],
      });
    }
    const byId = new Map(this.uploads.map((u) => [u.item.id, u]));
    const committed = await this.deps.galleries.mutate(
      this.listingId,
      (g) => {
        if (!g || g.listingDeleted) throw notFound('listing_not_found', 'Listing', this.listingId);
        const mine = g.items.filter((i) => byId.has(i.id) && i.status === 'uploading');
        if (mine.length !== this.uploads.length)
          throw new AppError('conflict', 'The upload took too long and its files were discarded; send it again');
        const now = this.now();
        const items = withOnePrimary(
          g.items.map((i) => {
            const upload = byId.get(i.id);
            if (!upload) return i;
            const { info, contentType, width, height } = upload.stored!;
            return {
              ...i,
              status: 'processing' as const,
              caption: upload.caption,
              bytes: info.size,
              contentType,
              width,
              height,
              since: now,
            };
          }),
        );
        return {
          change: { items },
          event: changedEvent(g, items, 'uploaded', [...byId.keys()], now, this.ctx.requestId),
          result: (saved) => shownMedia(this.listingId, saved.items).filter((m) => byId.has(m.id)),
        };
      },
      () => this.now(),
    );
    this.deps.outbox.kick();
    for (const media of committed) {
      const job = {
        accountId: this.ctx.who.accountId,
        listingId: this.listingId,
        mediaId: media.id,
        version: media.version,
        occurredAt: media.updatedAt,
      };
      // A job lost here (crash, bus down) is queued again by the sweep: the stored status is the truth.
      await this.deps.queue.enqueue(job, this.ctx.requestId).catch((err: unknown) => {
        this.deps.log.warn(
          { err, mediaId: media.id, requestId: this.ctx.requestId },
          'could not queue image processing; the sweep will',
        );
      });
    }
    return committed;
  }

  /** Takes back every slot of this request and deletes what it stored. */
  async abort(): Promise<void> {
    if (this.uploads.length === 0) return;
    const ids = new Set(this.uploads.map((u) => u.item.id));
    const tokens = this.uploads.map((u) => u.token);
    await this.deps.galleries.mutate(
      this.listingId,
      (g) => {
        if (!g || !g.items.some((i) => ids.has(i.id))) return { done: undefined };
        return {
          change: { items: g.items.filter((i) => !ids.has(i.id)), trash: [...(g.trash ?? []), ...tokens] },
          result: () => undefined,
        };
      },
      () => this.now(),
    );
    await this.deps.trash.empty(this.listingId, tokens);
    // A listing deleted meanwhile took the slots already; its files may have been written since.
    for (const token of tokens) await this.deps.files.deleteAll(token).catch(() => undefined);
  }

  private async reserve(): Promise<Upload> {
    const id = newId('med');
    const token = newFileToken();
    return this.deps.galleries.mutate(
      this.listingId,
      (g) => {
        const gallery = ownedBy(this.ctx.who, this.listingId, g);
        if (!hasRoomForImages(gallery.items)) {
          throw new AppError('media_limit_reached', `A listing may have at most ${MAX_IMAGES_PER_LISTING} images`, {
            fields: { limit: MAX_IMAGES_PER_LISTING },
          });
        }
        const now = this.now();
        // Version 0 while hidden: the write that shows it makes it 1.
        const item: MediaItem = {
          id,
          kind: 'image',
          status: 'uploading',
          isPrimary: false,
          fileToken: token,
          version: 0,
          createdAt: now,
          updatedAt: now,
          since: now,
        };
        return { change: { items: [...gallery.items, item] }, result: () => ({ item, token, captioned: false }) };
      },
      () => this.now(),
    );
  }
}

/**
 * The upload through the type check, as one readable stream. An upload that fails or stops short
 * (a body cut off, a client gone) fails the check stream too; when the check fails, the rest of
 * the upload is discarded as it arrives (never stored) so the request ends.
 */
function throughHead(source: Readable, head: UploadHead): Readable {
  // The parser destroys a part it gives up on without an error: `finished` reports that as a premature close.
  finished(source, (err) => {
    if (err) head.destroy(new UploadCutShortError(err));
  });
  head.once('error', () => {
    source.unpipe(head);
    source.resume();
  });
  return source.pipe(head);
}
