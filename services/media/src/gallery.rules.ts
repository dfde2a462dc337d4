import { outboxEntry, type OutboxEntry } from '@estate/bus';
import type { ListingMediaSummary } from '@estate/contracts/listings';
import {
  MAX_IMAGES_PER_LISTING,
  MAX_TOURS_PER_LISTING,
  type ImageContentType,
  type Media,
  type MediaKind,
  type MediaStatus,
  type mediaChanges,
} from '@estate/contracts/media';

/**
 * The media of one listing is one aggregate (a "gallery"): the image limit, the single primary
 * image and the order are rules over all of its items, so they live in one stored document and
 * every change is one atomic write (see docs/decisions/0020-media-gallery-aggregate.md).
 */

/** `uploading`: a slot reserved while the bytes stream in; never shown, but it counts toward the limit. */
export type ItemStatus = 'uploading' | MediaStatus;

export interface MediaItem {
  id: string;
  kind: MediaKind;
  caption?: string;
  isPrimary: boolean;
  status: ItemStatus;
  failureReason?: string;
  width?: number;
  height?: number;
  bytes?: number;
  contentType?: ImageContentType;
  /** Images: the unguessable token naming its files. */
  fileToken?: string;
  /** Tours: the link. */
  url?: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  /** Uploading: when the slot was reserved. Processing: when its job was last queued. */
  since?: string;
}

export type Rendition = 'original' | 'large' | 'thumb';
export const RENDITIONS: readonly Rendition[] = ['original', 'large', 'thumb'];

/** Public, key-free URLs of an image's files (the gateway routes `/files/*` to the media service). */
export function fileUrls(token: string): Record<Rendition, string> {
  return { original: `/files/${token}/original`, large: `/files/${token}/large`, thumb: `/files/${token}/thumb` };
}

export const isVisible = (item: MediaItem): boolean => item.status !== 'uploading';
export const visibleItems = (items: readonly MediaItem[]): MediaItem[] => items.filter(isVisible);

/**
 * The items after a gallery change, each whose public form changed (status, caption, primary, or its position among
 * the shown items: a deletion or a new order moves others) with `updatedAt` set to `now`, so that a client comparing
 * modification times (RESO's MediaModificationTimestamp) sees every item that changed.
 */
export function stampChanged(before: readonly MediaItem[], after: readonly MediaItem[], now: string): MediaItem[] {
  const was = new Map(visibleItems(before).map((item, order) => [item.id, { item, order }]));
  const order = new Map(visibleItems(after).map((item, position) => [item.id, position]));
  return after.map((item) => {
    const prior = was.get(item.id);
    if (!isVisible(item) || item.updatedAt === now) return item;
    const changed =
      !prior ||
      prior.order !== order.get(item.id) ||
      prior.item.status !== item.status ||
      prior.item.caption !== item.caption ||
      prior.item.isPrimary !== item.isPrimary;
    return changed ? { ...item, updatedAt: now } : item;
  });
}

export function imageCount(items: readonly MediaItem[]): number {
  return items.filter((i) => i.kind === 'image').length;
}

export function tourCount(items: readonly MediaItem[]): number {
  return items.filter((i) => i.kind === 'virtual_tour').length;
}

export function hasRoomForImages(items: readonly MediaItem[], more = 1): boolean {
  return imageCount(items) + more <= MAX_IMAGES_PER_LISTING;
}

export function hasRoomForTour(items: readonly MediaItem[]): boolean {
  return tourCount(items) < MAX_TOURS_PER_LISTING;
}

/**
 * Exactly one primary among the shown images whenever there is one: the current primary stays
 * unless it failed while another image did not; otherwise the first image in order that did not
 * fail is promoted (the first image at all if every one failed). Tours are never primary.
 */
export function withOnePrimary(items: readonly MediaItem[]): MediaItem[] {
  const images = items.filter((i) => i.kind === 'image' && isVisible(i));
  const healthy = images.filter((i) => i.status !== 'failed');
  const current = images.find((i) => i.isPrimary);
  let primary: MediaItem | undefined;
  if (current && (current.status !== 'failed' || healthy.length === 0)) primary = current;
  else primary = healthy[0] ?? images[0];
  return items.map((i) => {
    const should = i === primary;
    return i.isPrimary === should ? i : { ...i, isPrimary: should };
  });
}

/** Makes `id` the primary image (the caller checked it is a shown image). */
export function makePrimary(items: readonly MediaItem[], id: string): MediaItem[] {
  return items.map((i) => {
    const should = i.id === id;
    return i.isPrimary === should ? i : { ...i, isPrimary: should };
  });
}

/** The ids a reorder must list: every shown item, each once. Null when `ids` is exactly that. */
export function permutationProblem(items: readonly MediaItem[], ids: readonly string[]): string | null {
  const shown = visibleItems(items).map((i) => i.id);
  const given = new Set(ids);
  if (given.size !== ids.length) return 'lists a media id more than once';
  const unknown = ids.filter((id) => !shown.includes(id));
  if (unknown.length > 0) return `names media that the listing does not have: ${unknown.join(', ')}`;
  const missing = shown.filter((id) => !given.has(id));
  if (missing.length > 0) return `must list every media id of the listing; missing: ${missing.join(', ')}`;
  return null;
}

/** Shown items in the given order, then slots still uploading. */
export function reordered(items: readonly MediaItem[], ids: readonly string[]): MediaItem[] {
  const byId = new Map(items.map((i) => [i.id, i]));
  return [...ids.map((id) => byId.get(id)!), ...items.filter((i) => !isVisible(i))];
}

/** The public form of an item; `order` is its position among the shown items. */
export function toMedia(listingId: string, item: MediaItem, order: number): Media {
  return {
    id: item.id,
    listingId,
    kind: item.kind,
    caption: item.caption ?? null,
    order,
    isPrimary: item.isPrimary,
    status: item.status === 'uploading' ? 'processing' : item.status,
    failureReason: item.failureReason ?? null,
    width: item.width ?? null,
    height: item.height ?? null,
    bytes: item.bytes ?? null,
    contentType: item.contentType ?? null,
    url: item.url ?? null,
    urls: item.fileToken ? fileUrls(item.fileToken) : null,
    version: item.version,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

export function shownMedia(listingId: string, items: readonly MediaItem[]): Media[] {
  return visibleItems(items).map((item, order) => toMedia(listingId, item, order));
}

/**
 * What the listing shows of its media: images that are ready (renditions exist), the primary
 * one once it is ready, and the tours, in order.
 */
export function mediaSummary(items: readonly MediaItem[]): ListingMediaSummary {
  const shown = visibleItems(items);
  const ready = shown.filter((i) => i.kind === 'image' && i.status === 'ready');
  const primary = ready.find((i) => i.isPrimary);
  return {
    photoCount: ready.length,
    primaryPhoto: primary
      ? { id: primary.id, urls: fileUrls(primary.fileToken!), caption: primary.caption ?? null }
      : null,
    virtualTours: shown
      .filter((i) => i.kind === 'virtual_tour')
      .map((t) => ({ id: t.id, url: t.url!, caption: t.caption ?? null })),
  };
}

/** `media.media.changed` for a gallery write; the version is the gallery's after the write. */
export function changedEvent(
  gallery: { id: string; accountId: string },
  items: readonly MediaItem[],
  change: (typeof mediaChanges)[number],
  mediaIds: string[],
  now: string,
  requestId?: string,
): (version: number) => OutboxEntry {
  return (version) =>
    outboxEntry(
      'media.media.changed',
      {
        accountId: gallery.accountId,
        listingId: gallery.id,
        version,
        occurredAt: now,
        change,
        mediaIds,
        summary: mediaSummary(items),
      },
      requestId,
    );
}
