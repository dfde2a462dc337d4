import { performance } from 'node:perf_hooks';
import { storeFile } from '@estate/embedded';
import { ListingRepository, type ListingDoc } from '@estate/listings';
import { SqliteListingIndex } from '@estate/search/sqlite-listing.index';
import { storable } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { generateListing, random } from './generated-listings';

const BATCH = 5000;

/**
 * Writes `count` generated listings of `accountId` into an embedded data folder's listings database while the
 * product is stopped: the documents in large transactions of the store, then the search index through its bulk
 * load (rows first, its indexes and counts built once at the end), from the same generated sequence. Loading a
 * million listings through the API would take the bench's whole budget; the product then starts on a folder as a
 * user's would look after a feed import.
 */
export async function seedListingFiles(
  dataDir: string,
  accountId: string,
  count: number,
): Promise<{ seconds: number; documentSeconds: number; indexSeconds: number }> {
  const started = performance.now();
  const store = SqliteDocumentStore.open(storeFile(dataDir, 'listings'));
  const index = new SqliteListingIndex({ database: store.database, gate: store });
  const generated = function* () {
    const rnd = random(42);
    for (let i = 0; i < count; i += BATCH)
      yield Array.from({ length: Math.min(BATCH, count - i) }, (_, k) => generateListing(i + k, rnd));
  };
  let documentSeconds = 0;
  try {
    const listings = await ListingRepository.open(store);
    await index.open();
    for (const batch of generated()) {
      await store.transaction(async () => {
        for (const listing of batch)
          await listings.collection.insertOne(storable({ ...listing, accountId }) as ListingDoc);
      });
    }
    documentSeconds = (performance.now() - started) / 1000;
    await index.load(async function* () {
      for (const batch of generated()) yield batch.map((listing) => ({ accountId, listing }));
    });
    store.database.exec('ANALYZE');
  } finally {
    await index.close();
    await store.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return { seconds, documentSeconds, indexSeconds: seconds - documentSeconds };
}
