import type {
  FieldQuery,
  FieldQueryResult,
  IndexedListing,
  IndexWrite,
  ListingIndex,
  ListingRemoval,
  ListingSearch,
  ListingSearchResult,
} from '@estate/search';

/**
 * The listings search index, whichever adapter serves it. Versions make every write idempotent:
 * the index refuses a listing or a deletion older than what it holds.
 */
export class ListingIndexRepository {
  constructor(private readonly index: ListingIndex) {}

  get kind(): ListingIndex['kind'] {
    return this.index.kind;
  }

  /** Which index this is: every index fed from the events needs its own consumer of them. */
  get name(): string {
    return this.index.name;
  }

  /** Creates the index if need be; `created` says it holds nothing yet. */
  open(): Promise<{ created: boolean }> {
    return this.index.open();
  }

  /** Indexes the listings; one its feed no longer has (`sourceMissing`) is taken out of the index instead. */
  async upsert(listings: readonly IndexedListing[], options?: IndexWrite): Promise<void> {
    const shown = listings.filter((l) => !l.listing.sourceMissing);
    const hidden = listings.filter((l) => l.listing.sourceMissing);
    if (shown.length > 0 || hidden.length === 0) await this.index.upsert(shown, options);
    if (hidden.length > 0)
      await this.index.remove(
        hidden.map((l) => ({ id: l.listing.id, version: l.listing.version })),
        options,
      );
  }

  remove(removals: readonly ListingRemoval[], options?: IndexWrite): Promise<void> {
    return this.index.remove(removals, options);
  }

  search(search: ListingSearch): Promise<ListingSearchResult> {
    return this.index.search(search);
  }

  /** The RESO Web API's queries over the listings' Data Dictionary fields. */
  select(query: FieldQuery): Promise<FieldQueryResult> {
    return this.index.select(query);
  }

  refresh(): Promise<void> {
    return this.index.refresh();
  }

  /** Builds a fresh index from `read` and swaps it in. */
  replaceAll(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    return this.index.replaceAll(() => shownOnly(read()));
  }

  /** Every listing held, as id and version, in id order and batches. */
  scanIds(): AsyncIterable<Array<{ id: string; version: number }>> {
    return this.index.scanIds();
  }

  ping(): Promise<void> {
    return this.index.ping();
  }

  close(): Promise<void> {
    return this.index.close();
  }
}

/** The listings search shows: not those their feed no longer has. */
async function* shownOnly(batches: AsyncIterable<readonly IndexedListing[]>): AsyncIterable<readonly IndexedListing[]> {
  for await (const batch of batches) {
    const shown = batch.filter((l) => !l.listing.sourceMissing);
    if (shown.length > 0) yield shown;
  }
}
