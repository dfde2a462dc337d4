import type { OutboxRelay } from '@estate/bus';
import type { Identity } from '@estate/contracts/accounts';
import {
  MAX_TOURS_PER_LISTING,
  type Media,
  type MediaListQuery,
  type MediaPatch,
  type VirtualTourCreate,
} from '@estate/contracts/media';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import {
  changedEvent,
  hasRoomForTour,
  isVisible,
  makePrimary,
  permutationProblem,
  reordered,
  shownMedia,
  stampChanged,
  toMedia,
  visibleItems,
  withOnePrimary,
  type MediaItem,
  type Rendition,
} from './gallery.rules';
import type { ListingLookup } from './clients/listings.client';
import type { ListingProjectionService } from './listing-projection.service';
import type { Decision, Gallery, GalleryRepository } from './repositories/gallery.repository';
import type { MediaFilesRepository } from './repositories/media-files.repository';
import type { TrashService } from './trash.service';

export interface GalleryDeps {
  galleries: GalleryRepository;
  files: MediaFilesRepository;
  trash: TrashService;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  /** The listings service, asked about a listing this service has not heard of yet. */
  listings: ListingLookup;
  projection: Pick<ListingProjectionService, 'listingChanged'>;
}

export const WRITERS = ['admin', 'integration'] as const;
export const READERS = ['admin', 'integration', 'agent'] as const;

/** `If-Match` on one media item: 412 when the client saw another version. */
function assertVersion(item: MediaItem, ifMatch: number | undefined): void {
  if (ifMatch !== undefined && ifMatch !== item.version) {
    throw new AppError('version_mismatch', `The media is at version ${item.version}, not ${ifMatch}`, {
      fields: { currentVersion: item.version },
    });
  }
}

/** The caller's listing, or 404: unknown, deleted and other accounts' listings all look the same. */
export function ownedBy(who: Identity, listingId: string, gallery: Gallery | null): Gallery {
  if (!gallery || gallery.listingDeleted || gallery.accountId !== who.accountId)
    throw notFound('listing_not_found', 'Listing', listingId);
  return gallery;
}

/**
 * A listing's gallery as clients edit it: the shown items, captions, the primary image, the
 * order, virtual tours, deletions, and the public files of its images.
 */
export class GalleryService {
  constructor(private readonly deps: GalleryDeps) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /** One gallery change (see {@link GalleryRepository.mutate}); the outbox is kicked for the event it wrote. */
  private async change<R>(listingId: string, decide: (gallery: Gallery | null) => Decision<R>): Promise<R> {
    const result = await this.deps.galleries.mutate(listingId, decide, () => this.now());
    this.deps.outbox.kick();
    return result;
  }

  /**
   * The caller's listing as this service knows it from the listing events; one it has not heard of
   * yet (a client that creates a listing and uploads at once outruns the event) is asked of the
   * listings service, and remembered when it is the caller's. Every miss asks, so an unknown
   * listing, a deleted one and another account's take the same path and time, and all answer 404.
   */
  async ownedGallery(who: Identity, listingId: string, requestId?: string): Promise<Gallery> {
    const gallery = await this.deps.galleries.get(listingId);
    if (gallery && !gallery.listingDeleted && gallery.accountId === who.accountId) return gallery;
    const found = await this.deps.listings.find(who, listingId, requestId);
    if (!found || gallery) return ownedBy(who, listingId, gallery);
    await this.deps.projection.listingChanged({ accountId: found.accountId, listingId, version: found.version });
    return ownedBy(who, listingId, await this.deps.galleries.get(listingId));
  }

  private shown(gallery: Gallery, mediaId: string): MediaItem {
    const item = gallery.items.find((i) => i.id === mediaId && isVisible(i));
    if (!item) throw notFound('media_not_found', 'Media', mediaId);
    return item;
  }

  async list(
    who: Identity,
    listingId: string,
    query: MediaListQuery,
  ): Promise<{ items: Media[]; nextCursor: string | null; total: number }> {
    assertRole(who, READERS, 'read media');
    const all = shownMedia(listingId, (await this.ownedGallery(who, listingId)).items);
    const cursor = decodeCursor(query.cursor, who.accountId);
    // The cursor names the last item seen; if it was deleted meanwhile, its position still counts.
    let start = 0;
    if (cursor) {
      const at = all.findIndex((m) => m.id === cursor.id);
      start = at >= 0 ? at + 1 : Math.max(0, Number(cursor.v) + 1);
    }
    const items = all.slice(start, start + query.limit);
    const last = items[items.length - 1];
    const more = start + query.limit < all.length;
    return {
      items,
      nextCursor: more && last ? encodeCursor({ v: last.order, id: last.id }, who.accountId) : null,
      total: all.length,
    };
  }

  /**
   * The shown media of many listings of the caller's account at once, in display order (the RESO Web API's
   * `$expand=Media` of a page); listings without media, or not the caller's, have none.
   */
  async forListings(who: Identity, listingIds: readonly string[]): Promise<Record<string, Media[]>> {
    assertRole(who, READERS, 'read media');
    const out: Record<string, Media[]> = {};
    if (listingIds.length === 0) return out;
    const galleries = await this.deps.galleries.find(
      { id: { $in: [...listingIds] }, accountId: who.accountId },
      listingIds.length,
    );
    for (const gallery of galleries)
      if (!gallery.listingDeleted) out[gallery.id] = shownMedia(gallery.id, gallery.items);
    return out;
  }

  async get(who: Identity, listingId: string, mediaId: string): Promise<Media> {
    assertRole(who, READERS, 'read media');
    const gallery = await this.ownedGallery(who, listingId);
    const item = this.shown(gallery, mediaId);
    return toMedia(listingId, item, visibleItems(gallery.items).indexOf(item));
  }

  async addTour(ctx: RequestContext, listingId: string, input: VirtualTourCreate): Promise<Media> {
    assertRole(ctx.who, WRITERS, 'add media');
    await this.ownedGallery(ctx.who, listingId, ctx.requestId);
    const id = newId('med');
    const created = await this.change(listingId, (g) => {
      const gallery = ownedBy(ctx.who, listingId, g);
      if (!hasRoomForTour(gallery.items)) {
        throw new AppError('media_limit_reached', `A listing may have at most ${MAX_TOURS_PER_LISTING} virtual tours`, {
          fields: { limit: MAX_TOURS_PER_LISTING },
        });
      }
      const now = this.now();
      const tour: MediaItem = {
        id,
        kind: 'virtual_tour',
        url: input.url,
        caption: input.caption || undefined,
        isPrimary: false,
        status: 'ready',
        version: 1,
        createdAt: now,
        updatedAt: now,
      };
      const items = [...gallery.items, tour];
      return {
        change: { items },
        event: changedEvent(gallery, items, 'uploaded', [id], now, ctx.requestId),
        result: (saved) => this.mediaOf(saved, id),
      };
    });
    return created;
  }

  async update(
    ctx: RequestContext,
    listingId: string,
    mediaId: string,
    patch: MediaPatch,
    ifMatch?: number,
  ): Promise<Media> {
    assertRole(ctx.who, WRITERS, 'change media');
    await this.ownedGallery(ctx.who, listingId, ctx.requestId);
    const updated = await this.change<Media>(listingId, (g) => {
      const gallery = ownedBy(ctx.who, listingId, g);
      const item = this.shown(gallery, mediaId);
      assertVersion(item, ifMatch);
      if (patch.isPrimary && item.kind !== 'image') {
        throw new AppError('validation_failed', 'A virtual tour cannot be the primary photo', {
          errors: [{ path: 'isPrimary', message: 'only images can be primary' }],
        });
      }
      if (patch.isPrimary && item.status === 'failed') {
        throw new AppError('validation_failed', 'An image whose processing failed cannot be the primary photo', {
          errors: [{ path: 'isPrimary', message: 'the image failed processing' }],
        });
      }
      const now = this.now();
      let items = gallery.items;
      const caption = patch.caption === undefined ? item.caption : patch.caption || undefined;
      if (caption !== item.caption) items = items.map((i) => (i.id === mediaId ? { ...i, caption } : i));
      if (patch.isPrimary && !item.isPrimary) items = makePrimary(items, mediaId);
      if (items === gallery.items) return { done: this.mediaOf(gallery, mediaId) };
      items = stampChanged(gallery.items, items, now);
      return {
        change: { items },
        event: changedEvent(gallery, items, 'updated', [mediaId], now, ctx.requestId),
        result: (saved) => this.mediaOf(saved, mediaId),
      };
    });
    return updated;
  }

  async reorder(ctx: RequestContext, listingId: string, mediaIds: string[]): Promise<Media[]> {
    assertRole(ctx.who, WRITERS, 'reorder media');
    await this.ownedGallery(ctx.who, listingId, ctx.requestId);
    const result = await this.change<Media[]>(listingId, (g) => {
      const gallery = ownedBy(ctx.who, listingId, g);
      const problem = permutationProblem(gallery.items, mediaIds);
      if (problem)
        throw new AppError('validation_failed', `The new order ${problem}`, {
          errors: [{ path: 'mediaIds', message: problem }],
        });
      const now = this.now();
      const moved = reordered(gallery.items, mediaIds);
      if (moved.every((item, i) => item === gallery.items[i])) return { done: shownMedia(listingId, gallery.items) };
      const items = stampChanged(gallery.items, moved, now);
      return {
        change: { items },
        event: changedEvent(gallery, items, 'reordered', mediaIds, now, ctx.requestId),
        result: (saved) => shownMedia(listingId, saved.items),
      };
    });
    return result;
  }

  async remove(
    ctx: RequestContext,
    listingId: string,
    mediaId: string,
    ifMatch?: number,
  ): Promise<{ id: string; deleted: true }> {
    assertRole(ctx.who, WRITERS, 'delete media');
    await this.ownedGallery(ctx.who, listingId, ctx.requestId);
    const token = await this.change(listingId, (g) => {
      const gallery = ownedBy(ctx.who, listingId, g);
      const item = this.shown(gallery, mediaId);
      assertVersion(item, ifMatch);
      const now = this.now();
      const items = stampChanged(gallery.items, withOnePrimary(gallery.items.filter((i) => i.id !== mediaId)), now);
      const trash = item.fileToken ? [...(gallery.trash ?? []), item.fileToken] : gallery.trash;
      return {
        change: { items, trash },
        event: changedEvent(gallery, items, 'deleted', [mediaId], now, ctx.requestId),
        result: () => item.fileToken,
      };
    });
    // The files go now, so their URLs answer 404 as soon as the client has its answer.
    if (token) await this.deps.trash.empty(listingId, [token]);
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
