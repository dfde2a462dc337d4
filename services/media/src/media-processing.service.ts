import { randomUUID } from 'node:crypto';
import type { OutboxRelay } from '@estate/bus';
import { MAX_IMAGE_BYTES } from '@estate/contracts/media';
import type { Logger } from 'pino';
import type { ImageJob, ImageJobQueue } from './events/image-jobs';
import { changedEvent, emptyTrash } from './gallery.ops';
import { withOnePrimary, type MediaItem } from './gallery.rules';
import type { Gallery, GalleryRepository } from './repositories/gallery.repository';
import { UnreadableImageError, type ImageProcessor } from './repositories/image.processor';
import type { MediaFiles } from './repositories/media-files.repository';

export interface MediaProcessingDeps {
  galleries: GalleryRepository;
  files: MediaFiles;
  images: ImageProcessor;
  jobs: ImageJobQueue;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

/** A slot still `uploading` this long after it was reserved belongs to a request that died. */
export const ABANDONED_UPLOAD_MS = 30 * 60 * 1000;

/**
 * Work off the request path: renditions (the `media.image.process` worker), the listing
 * projection fed by listing events (and the cascade when a listing goes), and the sweep that
 * finishes what a crash interrupted. The stored gallery is the truth every step starts from.
 */
export class MediaProcessingService {
  constructor(private readonly deps: MediaProcessingDeps) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /** Makes the renditions of one image; a job for an image that is gone or done changes nothing. */
  async process(job: ImageJob, requestId?: string): Promise<void> {
    const log = this.deps.log.child({ listingId: job.listingId, mediaId: job.mediaId, requestId });
    const item = (await this.deps.galleries.get(job.listingId))?.items.find((i) => i.id === job.mediaId);
    if (!item || item.status !== 'processing' || !item.fileToken || !item.contentType) return;
    const token = item.fileToken;
    const source = await this.deps.files.readSource(token);
    if (!source) {
      await this.finish(job, { status: 'failed', failureReason: 'The uploaded file is missing from storage' }, log);
      return;
    }
    const started = Date.now();
    let rendered;
    try {
      rendered = await this.deps.images.render(source, item.contentType, MAX_IMAGE_BYTES, (file) => this.deps.files.putRendition(token, file));
    } catch (err) {
      if (!(err instanceof UnreadableImageError)) throw err;
      log.info({ reason: err.message }, 'image processing failed');
      await this.finish(job, { status: 'failed', failureReason: capitalised(err.message) }, log);
      return;
    }
    const outcome = await this.finish(job, { status: 'ready', width: rendered.width, height: rendered.height }, log);
    // Deleted while we rendered: its trash was emptied before our files existed, so remove them.
    if (outcome === 'gone') await this.deps.files.deleteAll(token);
    else log.info({ ms: Date.now() - started, width: rendered.width, height: rendered.height, outcome }, 'image processed');
  }

  private async finish(job: ImageJob, result: Pick<MediaItem, 'status' | 'failureReason' | 'width' | 'height'>, log: Logger): Promise<'done' | 'gone' | 'stale'> {
    const outcome = await this.deps.galleries.mutate<'done' | 'gone' | 'stale'>(
      job.listingId,
      (g) => {
        const item = g?.items.find((i) => i.id === job.mediaId);
        if (!g || !item) return { done: 'gone' as const };
        if (item.status !== 'processing') return { done: 'stale' as const };
        const now = this.now();
        const items = withOnePrimary(g.items.map((i) => (i.id === job.mediaId ? { ...i, ...result, since: undefined } : i)));
        return { change: { items }, event: changedEvent(g, items, 'processed', [job.mediaId], now, undefined), result: () => 'done' as const };
      },
      () => this.now(),
    );
    if (outcome === 'done') this.deps.outbox.kick();
    else log.debug({ outcome }, 'image job found nothing to finish');
    return outcome;
  }

  /**
   * `listings.listing.created|updated`: remember that the listing exists and whose it is. The
   * owner never changes, so a listing already known (or deleted) needs no write: repeats, late
   * events and every later update cost one read.
   */
  async listingChanged(event: { accountId: string; listingId: string; version: number }): Promise<void> {
    if (await this.deps.galleries.get(event.listingId)) return;
    const now = this.now();
    // Losing the insert race to another replica handling the same listing is as good as winning it.
    await this.deps.galleries.insert({ id: event.listingId, accountId: event.accountId, listingVersion: event.version, items: [], version: 1, createdAt: now, updatedAt: now });
  }

  /**
   * `listings.listing.deleted`: the listing's media and files go. The gallery stays as a small
   * marker, so a late or replayed `created` cannot bring the listing back here.
   */
  async listingDeleted(event: { accountId: string; listingId: string; version: number }): Promise<void> {
    for (;;) {
      const current = await this.deps.galleries.get(event.listingId);
      if (!current) {
        const now = this.now();
        const marker: Gallery = { id: event.listingId, accountId: event.accountId, listingVersion: event.version, listingDeleted: true, items: [], version: 1, createdAt: now, updatedAt: now };
        if (await this.deps.galleries.insert(marker)) return;
        continue;
      }
      const tokens = current.items.flatMap((i) => (i.fileToken ? [i.fileToken] : []));
      if (current.listingDeleted && tokens.length === 0) {
        await emptyTrash(this.deps, current.id, current.trash ?? []);
        return;
      }
      const trash = [...(current.trash ?? []), ...tokens];
      const saved = await this.deps.galleries.save(current, { listingDeleted: true, listingVersion: Math.max(event.version, current.listingVersion), items: [], trash }, this.now());
      if (saved) {
        this.deps.log.info({ listingId: event.listingId, media: current.items.length }, 'listing deleted: its media is removed');
        await emptyTrash(this.deps, current.id, trash);
        return;
      }
    }
  }

  /**
   * Finishes what crashes and lost messages left: files still in a trash are deleted, slots of
   * uploads that died are released, and images `processing` whose job was queued more than
   * `requeueAfterMs` ago are queued again (0 at the start of a process whose queue lived in
   * memory: those jobs died with it).
   */
  async sweep(options: { requeueAfterMs: number }): Promise<{ trashed: number; abandoned: number; requeued: number }> {
    const counts = { trashed: 0, abandoned: 0, requeued: 0 };
    for (const g of await this.deps.galleries.find({ trash: { $exists: true } })) {
      counts.trashed += g.trash?.length ?? 0;
      await emptyTrash(this.deps, g.id, g.trash ?? []);
    }
    const nowMs = this.deps.clock().getTime();
    const olderThan = (item: MediaItem, ms: number) => !item.since || Date.parse(item.since) <= nowMs - ms;

    for (const g of await this.deps.galleries.find({ 'items.status': 'uploading' })) {
      const released = await this.deps.galleries.mutate<string[]>(
        g.id,
        (current) => {
          const dead = (current?.items ?? []).filter((i) => i.status === 'uploading' && olderThan(i, ABANDONED_UPLOAD_MS));
          if (!current || dead.length === 0) return { done: [] as string[] };
          const ids = new Set(dead.map((i) => i.id));
          const tokens = dead.flatMap((i) => (i.fileToken ? [i.fileToken] : []));
          return { change: { items: current.items.filter((i) => !ids.has(i.id)), trash: [...(current.trash ?? []), ...tokens] }, result: () => tokens };
        },
        () => this.now(),
      );
      counts.abandoned += released.length;
      await emptyTrash(this.deps, g.id, released);
    }

    for (const g of await this.deps.galleries.find({ 'items.status': 'processing' })) {
      const due = await this.deps.galleries.mutate<MediaItem[]>(
        g.id,
        (current) => {
          const stale = (current?.items ?? []).filter((i) => i.status === 'processing' && olderThan(i, options.requeueAfterMs));
          if (!current || stale.length === 0) return { done: [] as MediaItem[] };
          const now = this.now();
          const ids = new Set(stale.map((i) => i.id));
          return { change: { items: current.items.map((i) => (ids.has(i.id) ? { ...i, since: now } : i)) }, result: () => stale };
        },
        () => this.now(),
      );
      for (const item of due) {
        await this.deps.jobs.enqueue({ eventId: randomUUID(), accountId: g.accountId, listingId: g.id, mediaId: item.id, version: item.version, occurredAt: this.now() });
        counts.requeued++;
      }
    }
    if (counts.trashed + counts.abandoned + counts.requeued > 0) this.deps.log.info(counts, 'media sweep');
    return counts;
  }
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
