import { performance } from 'node:perf_hooks';
import { storeFile } from '@estate/embedded';
import { ListingRepository, type ListingDoc } from '@estate/listings';
import { SqliteListingIndex } from '@estate/search/sqlite-listing.index';
import { storable } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { generateListing, random } from './generated-listings';

const BATCH = 5000;

/**
 * Writes `count` generated listings of `accountId` into an embedded data folder's listings database, as
 * documents with their search index rows, in large transactions, while the product is stopped: loading
 * a million listings through the API would take the bench's whole budget. The product then starts on a
 * folder as a user's would look after a feed import.
 */
export async function seedListingFiles(
  dataDir: string,
  accountId: string,
  count: number,
): Promise<{ seconds: number }> {
  const started = performance.now();
  const store = SqliteDocumentStore.open(storeFile(dataDir, 'listings'));
  const index = new SqliteListingIndex({ database: store.database, gate: store });
  try {
    const listings = await ListingRepository.open(store);
    await index.open();
    const rnd = random(42);
    for (let i = 0; i < count; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, count - i) }, (_, k) => generateListing(i + k, rnd));
      await store.transaction(async () => {
        for (const listing of batch)
          await listings.collection.insertOne(storable({ ...listing, accountId }) as ListingDoc);
        await index.upsert(batch.map((listing) => ({ accountId, listing })));
      });
    }
    store.database.exec('ANALYZE');
  } finally {
    await index.close();
    await store.close();
  }
  return { seconds: (performance.now() - started) / 1000 };
}
