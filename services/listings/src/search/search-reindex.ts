import type { ListingIndex } from '@estate/search';
import type { DocumentStore } from '@estate/store';
import { ListingRepository } from '../repositories/listing.repository';

/** Puts every stored listing into the index (versions decide against what it already holds). */
export async function fillIndexFromStore(listings: ListingRepository, index: ListingIndex): Promise<number> {
  let count = 0;
  for await (const batch of listings.scan()) {
    await index.upsert(batch);
    count += batch.length;
  }
  return count;
}

export interface ReindexReport {
  /** Listings in the fresh index. */
  indexed: number;
  /** Listings that changed or went while it was built, caught up afterwards. */
  removed: number;
}

/**
 * Rebuilds the index from the store while the service keeps running: a fresh index is filled and
 * swapped in, then reconciled with the store once more, because writes indexed during the build
 * went to the index it replaced. Versions keep every step idempotent.
 */
export async function reindexFromStore(listings: ListingRepository, index: ListingIndex): Promise<ReindexReport> {
  const { indexed } = await index.replaceAll(() => listings.scan());
  await fillIndexFromStore(listings, index);
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

/** The reindex command: the listings of `store` into `index` (opened here). */
export async function reindexListings(store: DocumentStore, index: ListingIndex): Promise<ReindexReport> {
  await index.open();
  return reindexFromStore(await ListingRepository.open(store), index);
}
