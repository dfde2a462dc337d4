import type { Logger } from 'pino';
import type { GalleryRepository } from './repositories/gallery.repository';
import type { MediaFilesRepository } from './repositories/media-files.repository';

/**
 * Deletes the files of tokens a gallery write put in its trash, then takes them out of the trash.
 * A failure leaves them there for the next sweep, so no file outlives its media for long.
 */
export class TrashService {
  constructor(
    private readonly deps: {
      galleries: GalleryRepository;
      files: MediaFilesRepository;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  async empty(listingId: string, tokens: readonly string[]): Promise<void> {
    if (tokens.length === 0) return;
    const deleted = new Set<string>();
    for (const token of tokens) {
      try {
        await this.deps.files.deleteAll(token);
        deleted.add(token);
      } catch (err) {
        this.deps.log.warn({ err, listingId }, 'could not delete media files; the sweep retries');
      }
    }
    if (deleted.size === 0) return;
    await this.deps.galleries.mutate(
      listingId,
      (g) => {
        const trash = g?.trash ?? [];
        if (!trash.some((t) => deleted.has(t))) return { done: undefined };
        return { change: { trash: trash.filter((t) => !deleted.has(t)) }, result: () => undefined };
      },
      () => this.deps.clock().toISOString(),
    );
  }
}
