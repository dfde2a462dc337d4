import type { OutboxRelay } from '@estate/bus';
import { MAX_IMAGE_BYTES } from '@estate/contracts/media';
import type { Logger } from 'pino';
import { changedEvent, stampChanged, withOnePrimary, type MediaItem } from './gallery.rules';
import type { GalleryRepository } from './repositories/gallery.repository';
import { UnreadableImageError, type ImageRendererRepository } from './repositories/image-renderer.repository';
import type { MediaFilesRepository } from './repositories/media-files.repository';
import type { RenditionJob } from './workers/rendition.worker';
import { metrics } from '@estate/platform/metrics';

/**
 * The renditions of one uploaded image (the `media.image.process` job), off the request path.
 * The stored gallery is the truth every job starts from: a job for an image that is gone or
 * already done changes nothing.
 */
export class RenditionService {
  constructor(
    private readonly deps: {
      galleries: GalleryRepository;
      files: MediaFilesRepository;
      images: ImageRendererRepository;
      outbox: Pick<OutboxRelay, 'kick'>;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /** Makes the renditions of one image; a job for an image that is gone or done changes nothing. */
  async process(job: RenditionJob, requestId?: string): Promise<void> {
    const log = this.deps.log.child({ listingId: job.listingId, mediaId: job.mediaId, requestId });
    const item = (await this.deps.galleries.get(job.listingId))?.items.find((i) => i.id === job.mediaId);
    if (!item || item.status !== 'processing' || !item.fileToken || !item.contentType) return;
    const token = item.fileToken;
    const source = await this.deps.files.readSource(token);
    if (!source) {
      await this.finish(job, { status: 'failed', failureReason: 'The uploaded file is missing from storage' }, log);
      metrics.mediaFailures.inc({ reason: 'file_missing' });
      return;
    }
    const started = Date.now();
    let rendered;
    try {
      rendered = await this.deps.images.render(source, item.contentType, MAX_IMAGE_BYTES, (file) =>
        this.deps.files.putRendition(token, file),
      );
    } catch (err) {
      if (!(err instanceof UnreadableImageError)) throw err;
      log.info({ reason: err.message, library: err.libraryMessage }, 'image processing failed');
      await this.finish(job, { status: 'failed', failureReason: capitalised(err.message) }, log);
      metrics.mediaFailures.inc({ reason: 'unreadable_image' });
      metrics.mediaProcessing.observe({ outcome: 'failed' }, (Date.now() - started) / 1000);
      return;
    }
    const outcome = await this.finish(job, { status: 'ready', width: rendered.width, height: rendered.height }, log);
    metrics.mediaProcessing.observe({ outcome: 'ready' }, (Date.now() - started) / 1000);
    // Deleted while we rendered: its trash was emptied before our files existed, so remove them.
    if (outcome === 'gone') await this.deps.files.deleteAll(token);
    else
      log.info(
        { ms: Date.now() - started, width: rendered.width, height: rendered.height, outcome },
        'image processed',
      );
  }

  private async finish(
    job: RenditionJob,
    result: Pick<MediaItem, 'status' | 'failureReason' | 'width' | 'height'>,
    log: Logger,
  ): Promise<'done' | 'gone' | 'stale'> {
    const outcome = await this.deps.galleries.mutate<'done' | 'gone' | 'stale'>(
      job.listingId,
      (g) => {
        const item = g?.items.find((i) => i.id === job.mediaId);
        if (!g || !item) return { done: 'gone' as const };
        if (item.status !== 'processing') return { done: 'stale' as const };
        const now = this.now();
        const items = stampChanged(
          g.items,
          withOnePrimary(g.items.map((i) => (i.id === job.mediaId ? { ...i, ...result, since: undefined } : i))),
          now,
        );
        return {
          change: { items },
          event: changedEvent(g, items, 'processed', [job.mediaId], now, undefined),
          result: () => 'done' as const,
        };
      },
      () => this.now(),
    );
    if (outcome === 'done') this.deps.outbox.kick();
    else log.debug({ outcome }, 'image job found nothing to finish');
    return outcome;
  }
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
