import { MemoryListingIndex } from '@estate/search/memory-listing.index';
import { listingBody } from '@estate/testing';
import { reindexListings } from '../src/compose';
import { alice, bob, ListingsHarness } from './harness';

describe('rebuilding the search index from the store (the reindex command)', () => {
  let h: ListingsHarness;

  beforeEach(async () => {
    h = await ListingsHarness.start();
  });
  afterEach(() => h.close());

  it('indexes every stored listing of every account and leaves the deleted ones out', async () => {
    const ids: string[] = [];
    for (const who of [alice, alice, bob])
      ids.push((await h.call(who, 'POST', '/v1/listings', listingBody())).json().id);
    expect((await h.call(alice, 'DELETE', `/v1/listings/${ids[0]}`)).statusCode).toBe(200);
    await h.runtime.relay.flush();

    const index = new MemoryListingIndex();
    expect(await reindexListings(h.store, index)).toEqual({ indexed: 2, removed: 0 });
    const held: string[] = [];
    for await (const batch of index.scanIds()) held.push(...batch.map((b) => b.id));
    expect(held.sort()).toEqual([ids[1], ids[2]].sort());
  });
});
