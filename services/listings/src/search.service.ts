import type { Identity } from '@estate/contracts/accounts';
import type { ListingPage, ListingSearchQuery } from '@estate/contracts/listings';
import { assertRole } from '@estate/platform/auth';
import { DependencyUnavailable } from '@estate/platform/errors';
import { SearchIndexUnavailable, type ListingSearchResult } from '@estate/search';
import { LISTING_READERS } from './listing.rules';
import type { ListingIndexRepository } from './repositories/listing-index.repository';
import { cursorOf, toIndexSearch } from './search-query.rules';

/** Listing search, served by the index (see docs/decisions/0010). */
export class SearchService {
  constructor(private readonly deps: { index: ListingIndexRepository }) {}

  /**
   * A page of the caller's listings, with times for Server-Timing: `indexMs` is the index's own time (Elasticsearch's
   * `took`), `callMs` the whole call to it as this service saw it (on Elasticsearch, plus its HTTP round trip).
   */
  async search(
    who: Identity,
    query: ListingSearchQuery,
  ): Promise<{ page: ListingPage; indexMs: number; callMs: number }> {
    assertRole(who, LISTING_READERS, 'read listings');
    const search = toIndexSearch(who.accountId, query);
    let result: ListingSearchResult;
    const started = performance.now();
    try {
      result = await this.deps.index.search(search);
    } catch (err) {
      if (err instanceof SearchIndexUnavailable) throw new DependencyUnavailable('search index', err);
      throw err;
    }
    const page: ListingPage = {
      items: result.items,
      nextCursor: cursorOf(result.next, search.sort, who.accountId),
      total: result.total,
    };
    if (search.facets.length > 0) page.facets = result.facets;
    return { page, indexMs: result.tookMs, callMs: performance.now() - started };
  }
}
