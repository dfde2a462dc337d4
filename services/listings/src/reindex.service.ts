import type { ListingIndexRepository } from './repositories/listing-index.repository';
import type { ListingRepository } from './repositories/listing.repository';

export interface ReindexReport {
  /** Listings in the fresh index. */
  indexed: number;
  /** Listings that changed or went while it was built, caught up afterwards. */
  removed: number;
}

/** Filling and rebuilding the search index from the store, the source of truth. */
export class ReindexService {
  constructor(private readonly deps: { listings: ListingRepository; index: ListingIndexRepository }) {}

  /** Puts every stored listing into the index (versions decide against what it already holds); how many. */
  async fill(): Promise<number> {
    let count = 0;
    for await (const batch of this.deps.listings.scan()) {
      await this.deps.index.upsert(batch);
      count += batch.length;
    }
    return count;
  }

  /**
   * Rebuilds the index from the store while the service keeps running: a fresh index is filled and
   * swapped in, then reconciled with the store once more, because writes indexed during the build
   * went to the index it replaced. Versions keep every step idempotent.
   */
  async rebuild(): Promise<ReindexReport> {
    const { listings, index } = this.deps;
    const { indexed } = await index.replaceAll(() => listings.scan());
    await this.fill();
    let removed = 0;
    for await (const held of index.scanIds()) {
      const present = await listings.existingIds(held.map((h) => h.id));
      // One version above the last indexed: a deletion, as the delete event would have carried it.
      const gone = held.filter((h) => !present.has(h.id)).map((h) => ({ id: h.id, version: h.version + 1 }));
      await index.remove(gone);
      removed += gone.length;
    }
    await index.refresh();
    return { indexed, removed };
  }
}
