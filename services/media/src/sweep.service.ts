import type { Logger } from 'pino';
import type { MediaItem } from './gallery.rules';
import type { GalleryRepository } from './repositories/gallery.repository';
import type { TrashService } from './trash.service';
import type { RenditionQueue } from './workers/rendition.worker';

/** A slot still `uploading` this long after it was reserved belongs to a request that died. */
export const ABANDONED_UPLOAD_MS = 30 * 60 * 1000;

export interface SweepCounts {
  trashed: number;
  abandoned: number;
  requeued: number;
}

/** Finishes what crashes and lost messages interrupted; the stored galleries say what that is. */
export class SweepService {
  constructor(
    private readonly deps: {
      galleries: GalleryRepository;
      trash: TrashService;
      queue: RenditionQueue;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /**
   * Finishes what crashes and lost messages left: files still in a trash are deleted, slots of
   * uploads that died are released, and images `processing` whose job was queued more than
   * `requeueAfterMs` ago are queued again (0 at the start of a process whose queue lived in
   * memory: those jobs died with it).
   */
  async run(options: { requeueAfterMs: number }): Promise<SweepCounts> {
    const counts = { trashed: 0, abandoned: 0, requeued: 0 };
    for (const g of await this.deps.galleries.find({ trash: { $exists: true } })) {
      counts.trashed += g.trash?.length ?? 0;
      await this.deps.trash.empty(g.id, g.trash ?? []);
    }
    const nowMs = this.deps.clock().getTime();
    const olderThan = (item: MediaItem, ms: number) => !item.since || Date.parse(item.since) <= nowMs - ms;

    for (const g of await this.deps.galleries.find({ 'items.status': 'uploading' })) {
      const released = await this.deps.galleries.mutate<string[]>(
        g.id,
        (current) => {
          const dead = (current?.items ?? []).filter(
            (i) => i.status === 'uploading' && olderThan(i, ABANDONED_UPLOAD_MS),
          );
          if (!current || dead.length === 0) return { done: [] as string[] };
          const ids = new Set(dead.map((i) => i.id));
          const tokens = dead.flatMap((i) => (i.fileToken ? [i.fileToken] : []));
          return {
            change: {
              items: current.items.filter((i) => !ids.has(i.id)),
              trash: [...(current.trash ?? []), ...tokens],
            },
            result: () => tokens,
          };
        },
        () => this.now(),
      );
      counts.abandoned += released.length;
      await this.deps.trash.empty(g.id, released);
    }

    for (const g of await this.deps.galleries.find({ 'items.status': 'processing' })) {
      const due = await this.deps.galleries.mutate<MediaItem[]>(
        g.id,
        (current) => {
          const stale = (current?.items ?? []).filter(
            (i) => i.status === 'processing' && olderThan(i, options.requeueAfterMs),
          );
          if (!current || stale.length === 0) return { done: [] as MediaItem[] };
          const now = this.now();
          const ids = new Set(stale.map((i) => i.id));
          return {
            change: { items: current.items.map((i) => (ids.has(i.id) ? { ...i, since: now } : i)) },
            result: () => stale,
          };
        },
        () => this.now(),
      );
      for (const item of due) {
        await this.deps.queue.enqueue({
          accountId: g.accountId,
          listingId: g.id,
          mediaId: item.id,
          version: item.version,
          occurredAt: this.now(),
        });
        counts.requeued++;
      }
    }
    if (counts.trashed + counts.abandoned + counts.requeued > 0) this.deps.log.info(counts, 'media sweep');
    return counts;
  }
}
