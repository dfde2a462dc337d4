import { outboxEntry, type OutboxEntry } from '@estate/bus';
import type { mediaChanges } from '@estate/contracts/media';
import type { Logger } from 'pino';
import { mediaSummary, type MediaItem } from './gallery.rules';
import type { GalleryRepository } from './repositories/gallery.repository';
import type { MediaFiles } from './repositories/media-files.repository';

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
      { accountId: gallery.accountId, listingId: gallery.id, version, occurredAt: now, change, mediaIds, summary: mediaSummary(items) },
      requestId,
    );
}

/**
 * Deletes the files of tokens a gallery write put in its trash, then takes them out of the trash.
 * A failure leaves them there for the next sweep, so no file outlives its media for long.
 */
export async function emptyTrash(
  deps: { galleries: GalleryRepository; files: MediaFiles; clock: () => Date; log: Logger },
  listingId: string,
  tokens: readonly string[],
): Promise<void> {
  if (tokens.length === 0) return;
  const deleted = new Set<string>();
  for (const token of tokens) {
    try {
      await deps.files.deleteAll(token);
      deleted.add(token);
    } catch (err) {
      deps.log.warn({ err, listingId }, 'could not delete media files; the sweep retries');
    }
  }
  if (deleted.size === 0) return;
  await deps.galleries.mutate(
    listingId,
    (g) => {
      const trash = g?.trash ?? [];
      if (!trash.some((t) => deleted.has(t))) return { done: undefined };
      return { change: { trash: trash.filter((t) => !deleted.has(t)) }, result: () => undefined };
    },
    () => deps.clock().toISOString(),
  );
}
