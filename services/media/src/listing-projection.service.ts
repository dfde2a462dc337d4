import { updateVersioned } from '@estate/store';
import type { Logger } from 'pino';
import {
  GALLERY_CHANGE_ATTEMPTS,
  GALLERY_WHAT,
  type Gallery,
  type GalleryRepository,
} from './repositories/gallery.repository';
import type { TrashService } from './trash.service';

type ListingEvent = { accountId: string; listingId: string; version: number };

/**
 * What this service knows of listings, from the listing events: which exist and whose each is
 * (a gallery per listing), and the cascade when one is deleted. Every handler is idempotent.
 */
export class ListingProjectionService {
  constructor(
    private readonly deps: { galleries: GalleryRepository; trash: TrashService; clock: () => Date; log: Logger },
  ) {}

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /**
   * `listings.listing.created|updated`: remember that the listing exists and whose it is. The
   * owner never changes, so a listing already known (or deleted) needs no write: repeats, late
   * events and every later update cost one read.
   */
  async listingChanged(event: ListingEvent): Promise<void> {
    if (await this.deps.galleries.get(event.listingId)) return;
    const now = this.now();
    // Losing the insert race to another replica handling the same listing is as good as winning it.
    await this.deps.galleries.insert({
      id: event.listingId,
      accountId: event.accountId,
      listingVersion: event.version,
      items: [],
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
  }

  /**
   * `listings.listing.deleted`: the listing's media and files go. The gallery stays as a small
   * marker, so a late or replayed `created` cannot bring the listing back here.
   */
  async listingDeleted(event: ListingEvent): Promise<void> {
    const { galleries, log } = this.deps;
    const outcome = await updateVersioned<Gallery | null, { listingId: string; trash: string[]; foreign?: boolean }>({
      what: GALLERY_WHAT,
      attempts: GALLERY_CHANGE_ATTEMPTS,
      read: () => galleries.get(event.listingId),
      versionOf: (gallery) => gallery?.version ?? 0,
      write: async (current) => {
        if (!current) {
          const now = this.now();
          const marker: Gallery = {
            id: event.listingId,
            accountId: event.accountId,
            listingVersion: event.version,
            listingDeleted: true,
            items: [],
            version: 1,
            createdAt: now,
            updatedAt: now,
          };
          return (await galleries.insert(marker)) ? { listingId: marker.id, trash: [] } : null;
        }
        // The event names an account that does not own this listing: nothing of another account's goes.
        if (current.accountId !== event.accountId) return { listingId: current.id, trash: [], foreign: true };
        const tokens = current.items.flatMap((i) => (i.fileToken ? [i.fileToken] : []));
        if (current.listingDeleted && tokens.length === 0) return { listingId: current.id, trash: current.trash ?? [] };
        const trash = [...(current.trash ?? []), ...tokens];
        const change = {
          listingDeleted: true as const,
          listingVersion: Math.max(event.version, current.listingVersion),
          items: [],
          trash,
        };
        if (!(await galleries.save(current, change, this.now()))) return null;
        log.info({ listingId: event.listingId, media: current.items.length }, 'listing deleted: its media is removed');
        return { listingId: current.id, trash };
      },
    });
    if (outcome.foreign) {
      log.warn(
        { listingId: event.listingId, accountId: event.accountId },
        'listing deleted event ignored: the listing belongs to another account',
      );
      return;
    }
    await this.deps.trash.empty(outcome.listingId, outcome.trash);
  }
}
