import { randomBytes, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { BlobTooLargeError, type BlobInfo } from '@estate/blobs';
import type { OutboxRelay } from '@estate/bus';
import type { Identity } from '@estate/contracts/accounts';
import { MAX_IMAGE_BYTES, MAX_IMAGES_PER_LISTING, MAX_TOURS_PER_LISTING, type ImageContentType, type Media, type MediaListQuery, type MediaPatch, type VirtualTourCreate } from '@estate/contracts/media';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import type { Logger } from 'pino';
import type { ImageJobQueue } from './events/image-jobs';
import { changedEvent, emptyTrash } from './gallery.ops';
import {
  hasRoomForImages,
  hasRoomForTour,
  isVisible,
  makePrimary,
  permutationProblem,
  reordered,
  shownMedia,
  toMedia,
  visibleItems,
  withOnePrimary,
  type MediaItem,
  type Rendition,
} from './gallery.rules';
import { ConcurrentChangeError, type Decision, type Gallery, type GalleryRepository } from './repositories/gallery.repository';
import { ImageTooLargeError, UnreadableImageError, type ImageProcessor } from './repositories/image.processor';
import { newFileToken, type MediaFiles } from './repositories/media-files.repository';
import { EmptyFileError, UnsupportedImageTypeError, UploadHead } from './upload-head';

export interface MediaDeps {
  galleries: GalleryRepository;
  files: MediaFiles;
  images: ImageProcessor;
  jobs: ImageJobQueue;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
  /**
   * How long a request for a listing this service has not heard of waits for the listing's
   * `created` event (a client that creates a listing and uploads at once can outrun the event).
   */
  listingWaitMs: number;
}

export interface WriteContext {
  who: Identity;
  requestId?: string;
}

const WRITERS = ['admin', 'integration'] as const;
const READERS = ['admin', 'integration', 'agent'] as const;
const LISTING_POLL_MS = 100;

export function newMediaId(): string {
  return `med_${randomBytes(12).toString('base64url')}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `If-Match` on one media item: 412 when the client saw another version. */
function assertVersion(item: MediaItem, ifMatch: number | undefined): void {
  if (ifMatch !== undefined && ifMatch !== item.version) {
    throw new AppError('version_mismatch', `The media is at version ${item.version}, not ${ifMatch}`, { fields: { currentVersion: item.version } });
  }
}

/** A gallery change for a client: a write that keeps losing to others is a 409 to retry, not a 500. */
async function changeFor<R>(galleries: GalleryRepository, listingId: string, decide: (gallery: Gallery | null) => Decision<R>, now: () => string): Promise<R> {
  try {
    return await galleries.mutate(listingId, decide, now);
  } catch (err) {
    if (err instanceof ConcurrentChangeError) throw new AppError('conflict', 'The listing\'s media is changing too often to apply this; retry', { cause: err });
    throw err;
  }
}

/** Turns what an upload can fail with into the answer the client gets. */
function uploadFailure(err: unknown): unknown {
  if (err instanceof UnsupportedImageTypeError) return new AppError('unsupported_media_type', err.message);
  if (err instanceof EmptyFileError) return new AppError('image_corrupt', 'The file is empty');
  if (err instanceof UnreadableImageError) return new AppError('image_corrupt', `The image cannot be read: ${err.message}`);
  if (err instanceof ImageTooLargeError) return new AppError('image_too_large', `The image is refused before decoding: ${err.message}`);
  if (err instanceof BlobTooLargeError) return new AppError('payload_too_large', `A file may be at most ${MAX_IMAGE_BYTES / 1024 / 1024} MB`);
  return err;
}

export class MediaService {
  constructor(private readonly deps: MediaDeps) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /** One gallery change (see {@link GalleryRepository.mutate}); the outbox is kicked for the event it wrote. */
  private async change<R>(listingId: string, decide: (gallery: Gallery | null) => Decision<R>): Promise<R> {
    const result = await changeFor(this.deps.galleries, listingId, decide, () => this.now());
    this.deps.outbox.kick();
    return result;
  }

  /**
   * The caller's listing as this service knows it (from listing events), waiting a moment for a
   * listing it has not heard of yet. Unknown, deleted and other accounts' listings are all 404.
   */
  async ownedGallery(who: Identity, listingId: string): Promise<Gallery> {
    const deadline = Date.now() + this.deps.listingWaitMs;
    let gallery = await this.deps.galleries.get(listingId);
    while (!gallery && Date.now() < deadline) {
      await sleep(LISTING_POLL_MS);
      gallery = await this.deps.galleries.get(listingId);
    }
    return this.owned(who, listingId, gallery);
  }

  private owned(who: Identity, listingId: string, gallery: Gallery | null): Gallery {
    if (!gallery || gallery.listingDeleted || gallery.accountId !== who.accountId) throw notFound('listing_not_found', 'Listing', listingId);
    return gallery;
  }

  private shown(gallery: Gallery, mediaId: string): MediaItem {
    const item = gallery.items.find((i) => i.id === mediaId && isVisible(i));
    if (!item) throw notFound('media_not_found', 'Media', mediaId);
    return item;
  }

  async list(who: Identity, listingId: string, query: MediaListQuery): Promise<{ items: Media[]; nextCursor: string | null; total: number }> {
    assertRole(who, READERS, 'read media');
    const all = shownMedia(listingId, (await this.ownedGallery(who, listingId)).items);
    const cursor = decodeCursor(query.cursor);
    // The cursor names the last item seen; if it was deleted meanwhile, its position still counts.
    let start = 0;
    if (cursor) {
      const at = all.findIndex((m) => m.id === cursor.id);
      start = at >= 0 ? at + 1 : Math.max(0, Number(cursor.v) + 1);
    }
    const items = all.slice(start, start + query.limit);
    const last = items[items.length - 1];
    const more = start + query.limit < all.length;
    return { items, nextCursor: more && last ? encodeCursor({ v: last.order, id: last.id }) : null, total: all.length };
  }

  async get(who: Identity, listingId: string, mediaId: string): Promise<Media> {
    assertRole(who, READERS, 'read media');
    const gallery = await this.ownedGallery(who, listingId);
    const item = this.shown(gallery, mediaId);
    return toMedia(listingId, item, visibleItems(gallery.items).indexOf(item));
  }

  async addTour(ctx: WriteContext, listingId: string, input: VirtualTourCreate): Promise<Media> {
    assertRole(ctx.who, WRITERS, 'add media');
    await this.ownedGallery(ctx.who, listingId);
    const id = newMediaId();
    const created = await this.change(
      listingId,
      (g) => {
        const gallery = this.owned(ctx.who, listingId, g);
        if (!hasRoomForTour(gallery.items)) {
          throw new AppError('media_limit_reached', `A listing may have at most ${MAX_TOURS_PER_LISTING} virtual tours`, { fields: { limit: MAX_TOURS_PER_LISTING } });
        }
        const now = this.now();
        const tour: MediaItem = { id, kind: 'virtual_tour', url: input.url, caption: input.caption || undefined, isPrimary: false, status: 'ready', version: 1, createdAt: now, updatedAt: now };
        const items = [...gallery.items, tour];
        return {
          change: { items },
          event: changedEvent(gallery, items, 'uploaded', [id], now, ctx.requestId),
          result: (saved) => this.mediaOf(saved, id),
        };
      },
    );
    return created;
  }

  /** Starts a multipart upload: files are added one by one as they stream in, then committed together. */
  async beginUpload(ctx: WriteContext, listingId: string): Promise<UploadSession> {
    assertRole(ctx.who, WRITERS, 'add media');
    await this.ownedGallery(ctx.who, listingId);
    return new UploadSession(this.deps, ctx, listingId);
  }

  async update(ctx: WriteContext, listingId: string, mediaId: string, patch: MediaPatch, ifMatch?: number): Promise<Media> {
    assertRole(ctx.who, WRITERS, 'change media');
    await this.ownedGallery(ctx.who, listingId);
    const updated = await this.change<Media>(
      listingId,
      (g) => {
        const gallery = this.owned(ctx.who, listingId, g);
        const item = this.shown(gallery, mediaId);
        assertVersion(item, ifMatch);
        if (patch.isPrimary && item.kind !== 'image') {
          throw new AppError('validation_failed', 'A virtual tour cannot be the primary photo', { errors: [{ path: 'isPrimary', message: 'only images can be primary' }] });
        }
        if (patch.isPrimary && item.status === 'failed') {
          throw new AppError('validation_failed', 'An image whose processing failed cannot be the primary photo', { errors: [{ path: 'isPrimary', message: 'the image failed processing' }] });
        }
        const now = this.now();
        let items = gallery.items;
        const caption = patch.caption === undefined ? item.caption : patch.caption || undefined;
        if (caption !== item.caption) items = items.map((i) => (i.id === mediaId ? { ...i, caption } : i));
        if (patch.isPrimary && !item.isPrimary) items = makePrimary(items, mediaId);
        if (items === gallery.items) return { done: this.mediaOf(gallery, mediaId) };
        return {
          change: { items },
          event: changedEvent(gallery, items, 'updated', [mediaId], now, ctx.requestId),
          result: (saved) => this.mediaOf(saved, mediaId),
        };
      },
    );
    return updated;
  }

  async reorder(ctx: WriteContext, listingId: string, mediaIds: string[]): Promise<Media[]> {
    assertRole(ctx.who, WRITERS, 'reorder media');
    await this.ownedGallery(ctx.who, listingId);
    const result = await this.change<Media[]>(
      listingId,
      (g) => {
        const gallery = this.owned(ctx.who, listingId, g);
        const problem = permutationProblem(gallery.items, mediaIds);
        if (problem) throw new AppError('validation_failed', `The new order ${problem}`, { errors: [{ path: 'mediaIds', message: problem }] });
        const now = this.now();
        const items = reordered(gallery.items, mediaIds);
        if (items.every((item, i) => item === gallery.items[i])) return { done: shownMedia(listingId, gallery.items) };
        return {
          change: { items },
          event: changedEvent(gallery, items, 'reordered', mediaIds, now, ctx.requestId),
          result: (saved) => shownMedia(listingId, saved.items),
        };
      },
    );
    return result;
  }

  async remove(ctx: WriteContext, listingId: string, mediaId: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(ctx.who, WRITERS, 'delete media');
    await this.ownedGallery(ctx.who, listingId);
    const token = await this.change(
      listingId,
      (g) => {
        const gallery = this.owned(ctx.who, listingId, g);
        const item = this.shown(gallery, mediaId);
        assertVersion(item, ifMatch);
        const now = this.now();
        const items = withOnePrimary(gallery.items.filter((i) => i.id !== mediaId));
        const trash = item.fileToken ? [...(gallery.trash ?? []), item.fileToken] : gallery.trash;
        return {
          change: { items, trash },
          event: changedEvent(gallery, items, 'deleted', [mediaId], now, ctx.requestId),
          result: () => item.fileToken,
        };
      },
    );
    // The files go now, so their URLs answer 404 as soon as the client has its answer.
    if (token) await emptyTrash(this.deps, listingId, [token]);
    return { id: mediaId, deleted: true };
  }

  /** A public file by token (no key: the token is the secret). */
  openFile(token: string, rendition: Rendition, format: 'jpeg' | 'webp' | undefined) {
    return this.deps.files.open(token, rendition, format);
  }

  private mediaOf(gallery: Gallery, mediaId: string): Media {
    const shown = visibleItems(gallery.items);
    const item = shown.find((i) => i.id === mediaId)!;
    return toMedia(gallery.id, item, shown.indexOf(item));
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
    private readonly deps: MediaDeps,
    private readonly ctx: WriteContext,
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
      info = await this.deps.files.putSource(upload.token, throughHead(stream, head), 'application/octet-stream', MAX_IMAGE_BYTES);
    } catch (err) {
      throw uploadFailure(err);
    }
    const contentType = head.type!;
    try {
      const header =
        (await this.deps.images.probe(head.head(), contentType, info.size <= head.head().length)) ??
        (await this.deps.images.probeStream((await this.deps.files.readSource(upload.token))!, contentType, MAX_IMAGE_BYTES));
      upload.stored = { info, contentType, ...header };
    } catch (err) {
      throw uploadFailure(err);
    }
  }

  /** The caption part that follows a file belongs to that file. */
  setCaption(text: string): void {
    const last = this.uploads[this.uploads.length - 1];
    if (!last) throw new AppError('validation_failed', 'A caption must follow the file it describes', { errors: [{ path: 'caption', message: 'must come after a file part' }] });
    if (last.captioned) throw new AppError('validation_failed', 'A file has two captions', { errors: [{ path: 'caption', message: 'only one caption per file' }] });
    last.captioned = true;
    last.caption = text.trim() || undefined;
  }

  async commit(): Promise<Media[]> {
    if (this.uploads.length === 0) {
      throw new AppError('validation_failed', 'Send at least one file part named `file`', { errors: [{ path: 'file', message: 'is required' }] });
    }
    const byId = new Map(this.uploads.map((u) => [u.item.id, u]));
    const committed = await changeFor(
      this.deps.galleries,
      this.listingId,
      (g) => {
        if (!g || g.listingDeleted) throw notFound('listing_not_found', 'Listing', this.listingId);
        const mine = g.items.filter((i) => byId.has(i.id) && i.status === 'uploading');
        if (mine.length !== this.uploads.length) throw new AppError('conflict', 'The upload took too long and its files were discarded; send it again');
        const now = this.now();
        const items = withOnePrimary(
          g.items.map((i) => {
            const upload = byId.get(i.id);
            if (!upload) return i;
            const { info, contentType, width, height } = upload.stored!;
            return { ...i, status: 'processing' as const, caption: upload.caption, bytes: info.size, contentType, width, height, since: now };
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
      const job = { accountId: this.ctx.who.accountId, listingId: this.listingId, mediaId: media.id, version: media.version, occurredAt: media.updatedAt };
      // A job lost here (crash, bus down) is queued again by the sweep: the stored status is the truth.
      await this.deps.jobs.enqueue({ ...job, eventId: randomUUID() }, this.ctx.requestId).catch((err: unknown) => {
        this.deps.log.warn({ err, mediaId: media.id, requestId: this.ctx.requestId }, 'could not queue image processing; the sweep will');
      });
    }
    return committed;
  }

  /** Takes back every slot of this request and deletes what it stored. */
  async abort(): Promise<void> {
    if (this.uploads.length === 0) return;
    const ids = new Set(this.uploads.map((u) => u.item.id));
    const tokens = this.uploads.map((u) => u.token);
    await changeFor(
      this.deps.galleries,
      this.listingId,
      (g) => {
        if (!g || !g.items.some((i) => ids.has(i.id))) return { done: undefined };
        return { change: { items: g.items.filter((i) => !ids.has(i.id)), trash: [...(g.trash ?? []), ...tokens] }, result: () => undefined };
      },
      () => this.now(),
    );
    await emptyTrash(this.deps, this.listingId, tokens);
    // A listing deleted meanwhile took the slots already; its files may have been written since.
    for (const token of tokens) await this.deps.files.deleteAll(token).catch(() => undefined);
  }

  private async reserve(): Promise<Upload> {
    const id = newMediaId();
    const token = newFileToken();
    return changeFor(
      this.deps.galleries,
      this.listingId,
      (g) => {
        if (!g || g.listingDeleted || g.accountId !== this.ctx.who.accountId) throw notFound('listing_not_found', 'Listing', this.listingId);
        if (!hasRoomForImages(g.items)) {
          throw new AppError('media_limit_reached', `A listing may have at most ${MAX_IMAGES_PER_LISTING} images`, { fields: { limit: MAX_IMAGES_PER_LISTING } });
        }
        const now = this.now();
        // Version 0 while hidden: the write that shows it makes it 1.
        const item: MediaItem = { id, kind: 'image', status: 'uploading', isPrimary: false, fileToken: token, version: 0, createdAt: now, updatedAt: now, since: now };
        return { change: { items: [...g.items, item] }, result: () => ({ item, token, captioned: false }) };
      },
      () => this.now(),
    );
  }
}

/**
 * The upload through the type check, as one readable stream. An error of the upload (the
 * multipart limit cutting it off, a client gone) fails the check stream too; when the check
 * fails, the rest of the upload is discarded as it arrives (never stored) so the request ends.
 */
function throughHead(source: Readable, head: UploadHead): Readable {
  source.once('error', (err) => head.destroy(err));
  head.once('error', () => {
    source.unpipe(head);
    source.resume();
  });
  return source.pipe(head);
}
