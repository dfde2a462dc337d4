import { createHash } from 'node:crypto';
import type { FeedLedger } from '@estate/contracts/feeds';
import { MAX_IMAGE_BYTES } from '@estate/contracts/media';
import type { RequestContext } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import type { FeedSourceClient } from '../clients/feed-source.client';
import type { MediaReader, MediaWriter } from '../clients/media.client';
import type { SourcePhoto } from '../feed-sync.rules';
import type { FeedPhotosDoc, FeedPhotosRepository, SyncedPhoto } from '../repositories/feed-photos.repository';

/** The run a gallery is synced for: who writes, which feed, and the ledger that counts the photos. */
export interface GalleryRun {
  ctx: RequestContext;
  accountId: string;
  feedId: string;
  ledger: FeedLedger;
}

/**
 * A feed's photos of one listing, made its gallery through the media service's writes (decision 0113): what was
 * synced of each listing is kept beside it, so that unchanged photos are neither downloaded nor uploaded again.
 */
export class FeedGallery {
  constructor(
    private readonly deps: {
      synced: FeedPhotosRepository;
      writer: MediaWriter;
      reader: MediaReader;
      source: Pick<FeedSourceClient, 'download'>;
    },
  ) {}

  /**
   * Brings a listing's gallery in step with the source's photos: a photo whose MediaModificationTimestamp did not
   * move is not downloaded; one downloaded with bytes the listing already has (same SHA-256) is not uploaded again;
   * a failed download keeps the photo we have and leaves the listing pending for the next run; photos the source
   * dropped are taken out; the gallery follows the source's order, its preferred photo first.
   */
  async sync(run: GalleryRun, listingId: string, photos: SourcePhoto[], changedAt?: string): Promise<void> {
    const { synced, writer, reader, source } = this.deps;
    const { ledger, ctx } = run;
    const doc = await synced.get(listingId);
    const before = doc?.items ?? [];
    const items: SyncedPhoto[] = [];
    let failed = false;
    for (const photo of photos) {
      const previous = before.find((p) => p.key === photo.key);
      if (previous && photo.modified && previous.modified === photo.modified) {
        ledger.mediaUnchanged++;
        items.push(previous);
        continue;
      }
      const got = await source.download(photo.url, MAX_IMAGE_BYTES).catch(() => ({ status: 0 }));
      if (got.status !== 200 || !('bytes' in got) || !got.bytes) {
        // An expired or refused URL, or the host away: what we have stays; the next run fetches fresh URLs.
        failed = true;
        ledger.mediaFailed++;
        if (previous) items.push(previous);
        continue;
      }
      ledger.mediaDownloaded++;
      const sha256 = createHash('sha256').update(got.bytes).digest('hex');
      const same = [...items, ...before].find((p) => p.sha256 === sha256);
      if (same) {
        ledger.mediaUnchanged++;
        items.push({
          key: photo.key,
          mediaId: same.mediaId,
          sha256,
          ...(photo.modified ? { modified: photo.modified } : {}),
        });
        continue;
      }
      try {
        const mediaId = await writer.addPhoto(ctx, listingId, {
          bytes: got.bytes,
          ...(photo.caption ? { caption: photo.caption } : {}),
        });
        ledger.mediaUploaded++;
        items.push({ key: photo.key, mediaId, sha256, ...(photo.modified ? { modified: photo.modified } : {}) });
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        // Refused by the media service (not an image, the gallery full): that photo's error, the rest goes on.
        ledger.mediaFailed++;
        if (previous) items.push(previous);
      }
    }
    const kept = new Set(items.map((p) => p.mediaId));
    for (const gone of new Set(before.map((p) => p.mediaId).filter((id) => !kept.has(id)))) {
      await writer.removeMedia(ctx, listingId, gone);
      ledger.mediaRemoved++;
    }
    const order = [...new Set(items.map((p) => p.mediaId))];
    if (order.length > 1) {
      const gallery = (await reader.forListings(ctx.who, [listingId], ctx.requestId))[listingId] ?? [];
      const current = gallery.map((m) => m.id);
      const wanted = [...order.filter((id) => current.includes(id)), ...current.filter((id) => !kept.has(id))];
      if (wanted.length === current.length && wanted.some((id, i) => id !== current[i]))
        await writer.reorder(ctx, listingId, wanted);
    }
    const next: FeedPhotosDoc = {
      id: listingId,
      accountId: run.accountId,
      feedId: run.feedId,
      listingKey: doc?.listingKey ?? '',
      ...(failed
        ? doc?.photosChangedAt
          ? { photosChangedAt: doc.photosChangedAt }
          : {}
        : changedAt
          ? { photosChangedAt: changedAt }
          : {}),
      pending: failed,
      items,
    };
    await synced.save(next);
  }
}
