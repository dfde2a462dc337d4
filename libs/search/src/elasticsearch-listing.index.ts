import { Client, errors, type estypes } from '@elastic/elasticsearch';
import type { Listing } from '@estate/contracts/listings';
import type { Logger } from 'pino';
import {
  SearchIndexRejected,
  SearchIndexUnavailable,
  type IndexedListing,
  type IndexWrite,
  type ListingIndex,
  type ListingRemoval,
  type FieldQuery,
  type FieldQueryResult,
  type ListingSearch,
  type ListingSearchResult,
} from './listing-index';
import { fieldSearchRequest, fieldSearchResult, resoDocument, resoMappings } from './elasticsearch-field-query';
import { GroupedWrites } from './grouped-writes';
import { projectListing } from './listing-projection';
import { listingIndexSettings, listingMappings, searchRequest, searchResult } from './elasticsearch-query';

export interface ElasticsearchListingIndexOptions {
  client: Client;
  /** The alias searches and writes go through; the physical index behind it changes on `replaceAll`. */
  alias: string;
  log: Logger;
}

const SCAN_BATCH = 1000;
/** The most listings one grouped visible write carries (single writes bring one each). */
const VISIBLE_GROUP_ITEMS = 200;

/** One bulk item: its action line and its document. */
type BulkItem = [action: { index: estypes.BulkIndexOperation }, document: Record<string, unknown>];
type BulkResult = estypes.BulkResponseItem | undefined;

/**
 * What went wrong with a bulk request's items, if anything: an item refused because a newer version is indexed is
 * what versioning is for, not an error.
 */
function bulkFailure(results: BulkResult[]): Error | undefined {
  const failed = results.filter((r) => r?.error && r.status !== 409);
  if (failed.length === 0) return undefined;
  const first = failed[0]!;
  const summary = `${failed.length} of ${results.length} documents refused; first: ${first.error?.type}: ${first.error?.reason}`;
  if (failed.some((r) => r!.status === 429 || r!.status >= 500)) return new SearchIndexUnavailable(summary);
  return new SearchIndexRejected(summary);
}

/** Network failures, overload and server errors pass; anything else is a request we got wrong. */
function isTransient(err: unknown): boolean {
  if (err instanceof errors.ResponseError) return err.statusCode === 429 || (err.statusCode ?? 0) >= 500;
  return (
    err instanceof errors.ConnectionError ||
    err instanceof errors.TimeoutError ||
    err instanceof errors.NoLivingConnectionsError
  );
}

const errorType = (err: unknown): string | undefined =>
  err instanceof errors.ResponseError
    ? (err.body as { error?: { type?: string } } | undefined)?.error?.type
    : undefined;
const isAlreadyExists = (err: unknown): boolean => errorType(err) === 'resource_already_exists_exception';
const isNotFound = (err: unknown): boolean => err instanceof errors.ResponseError && err.statusCode === 404;

/**
 * The distributed profile's index on Elasticsearch 8. Writes use external versioning (the
 * listing's version), so an older event never overwrites a newer document; a removal leaves a
 * versioned tombstone document rather than deleting, so a late older event cannot bring the
 * listing back once Elasticsearch has forgotten the deletion (`index.gc_deletes`, 60 s).
 */
export class ElasticsearchListingIndex implements ListingIndex {
  readonly kind = 'elasticsearch' as const;
  /** The `standard` analyzer: stemming filters live in a module the smallest Elasticsearch builds lack. */
  readonly textMatching = 'exact' as const;

  /**
   * Writes that must be searchable when answered (a client's own POST, PATCH or DELETE). Each refreshes the shard
   * with its bulk request (`refresh: true`, rather than `wait_for`, which waits up to `refresh_interval`:
   * docs/decisions/0011-search-sees-a-clients-own-writes.md). A refresh costs Elasticsearch about as much for one
   * document as for fifty (a new segment, then its merges), so the writes that arrive while one request is in flight
   * share the next request and its refresh (docs/decisions/0144-grouped-visible-index-writes.md).
   */
  private readonly visibleWrites = new GroupedWrites<BulkItem>(async (groups) => {
    const results = await this.bulk(this.alias, groups.flat(), true, true);
    let at = 0;
    return groups.map((items) => bulkFailure(results.slice(at, (at += items.length))));
  }, VISIBLE_GROUP_ITEMS);

  constructor(private readonly options: ElasticsearchListingIndexOptions) {}

  static connect(url: string, options: Omit<ElasticsearchListingIndexOptions, 'client'>): ElasticsearchListingIndex {
    return new ElasticsearchListingIndex({
      ...options,
      client: new Client({ node: url, requestTimeout: 10_000, maxRetries: 2 }),
    });
  }

  private get client(): Client {
    return this.options.client;
  }

  get name(): string {
    return this.options.alias;
  }

  private get alias(): string {
    return this.options.alias;
  }

  /**
   * Makes sure the alias exists, safe when replicas start together: the first physical index and its alias
   * are created in one request under a fixed name, so a second replica's request fails with "already exists"
   * (and finds the alias made), never half-way. `created` is true for the one replica that made it.
   */
  async open(): Promise<{ created: boolean }> {
    return this.call('open the index', async () => {
      if (await this.client.indices.existsAlias({ name: this.alias })) {
        // Indexes made before the RESO fields existed learn them (documents indexed then need a reindex to match).
        await this.client.indices.putMapping({ index: this.alias, properties: { reso: resoMappings } });
        return { created: false };
      }
      try {
        await this.client.indices.create({
          index: `${this.alias}-000001`,
          aliases: { [this.alias]: {} },
          settings: listingIndexSettings,
          mappings: listingMappings,
        });
        this.options.log.info({ alias: this.alias }, 'search index created');
        return { created: true };
      } catch (err) {
        if (isAlreadyExists(err)) return { created: false };
        if (errorType(err) === 'invalid_alias_name_exception') {
          // Only a write made without `require_alias` (an older version, or another program) makes one.
          throw new Error(`${this.alias} is an index, not an alias; remove it or choose another ELASTICSEARCH_INDEX`, {
            cause: err,
          });
        }
        throw err;
      }
    });
  }

  async upsert(listings: readonly IndexedListing[], options: IndexWrite = {}): Promise<void> {
    if (listings.length === 0) return;
    await this.write(
      listings.map((item) => this.indexOperation(item)),
      options,
    );
  }

  async remove(removals: readonly ListingRemoval[], options: IndexWrite = {}): Promise<void> {
    if (removals.length === 0) return;
    await this.write(
      removals.map(({ id, version }): BulkItem => [
        { index: { _id: id, version, version_type: 'external' } },
        { listingId: id, deleted: true },
      ]),
      options,
    );
  }

  /** Through the alias; a visible write joins the others of its moment (see `visibleWrites`). */
  private async write(items: BulkItem[], options: IndexWrite): Promise<void> {
    if (options.visible) return this.visibleWrites.write(items);
    const failure = bulkFailure(await this.bulk(this.alias, items, true));
    if (failure) throw failure;
  }

  async search(search: ListingSearch): Promise<ListingSearchResult> {
    const response = await this.call('search', () =>
      this.client.search<{ listing: Listing }>({ index: this.alias, ...searchRequest(search) }),
    );
    return searchResult(search, response);
  }

  async select(query: FieldQuery): Promise<FieldQueryResult> {
    const response = await this.call('search', () =>
      this.client.search<{ listing: Listing }>({ index: this.alias, ...fieldSearchRequest(query) }),
    );
    return fieldSearchResult(query, response);
  }

  async refresh(): Promise<void> {
    await this.call('refresh', () => this.client.indices.refresh({ index: this.alias }));
  }

  /**
   * Fills a new physical index, then moves the alias to it in one atomic step and drops the old
   * one: searches never see a half-built index. Writes that reach the old index meanwhile are
   * lost with it, so the caller reconciles with the store afterwards (see the listings reindex).
   */
  async replaceAll(read: () => AsyncIterable<readonly IndexedListing[]>): Promise<{ indexed: number }> {
    const target = `${this.alias}-${Date.now()}`;
    await this.call('create the new index', () =>
      this.client.indices.create({ index: target, settings: listingIndexSettings, mappings: listingMappings }),
    );
    let indexed = 0;
    try {
      for await (const batch of read()) {
        if (batch.length === 0) continue;
        const failure = bulkFailure(
          await this.bulk(
            target,
            batch.map((item) => this.indexOperation(item)),
          ),
        );
        if (failure) throw failure;
        indexed += batch.length;
      }
      await this.call('refresh the new index', () => this.client.indices.refresh({ index: target }));
    } catch (err) {
      await this.client.indices.delete({ index: target }).catch(() => undefined);
      throw err;
    }
    const current = await this.call('read the alias', async () => {
      if (!(await this.client.indices.existsAlias({ name: this.alias }))) return [];
      return Object.keys(await this.client.indices.getAlias({ name: this.alias }));
    });
    await this.call('move the alias', () =>
      this.client.indices.updateAliases({
        actions: [
          // By pattern: wherever the alias points by now (another rebuild may have moved it), it leaves.
          { remove: { index: `${this.alias}-*`, alias: this.alias, must_exist: false } },
          { add: { index: target, alias: this.alias } },
        ],
      }),
    );
    for (const old of current) {
      await this.call('drop the old index', async () => {
        await this.client.indices.delete({ index: old }).catch((err: unknown) => {
          if (!isNotFound(err)) throw err; // dropped by a rebuild running alongside
        });
      });
    }
    this.options.log.info({ alias: this.alias, index: target, indexed }, 'search index replaced');
    return { indexed };
  }

  async *scanIds(): AsyncIterable<Array<{ id: string; version: number }>> {
    let after: estypes.SortResults | undefined;
    for (;;) {
      const response = await this.call('scan', () =>
        this.client.search<{ listing: Pick<Listing, 'version'> }>({
          index: this.alias,
          size: SCAN_BATCH,
          // Tombstones have no account: only listings.
          query: { exists: { field: 'accountId' } },
          sort: [{ listingId: 'asc' }],
          _source: ['listing.version'],
          track_total_hits: false,
          ...(after ? { search_after: after } : {}),
        }),
      );
      const hits = response.hits.hits;
      if (hits.length === 0) return;
      yield hits.map((h) => ({ id: h._id!, version: h._source!.listing.version }));
      after = hits[hits.length - 1].sort;
    }
  }

  async ping(): Promise<void> {
    // The integ-test build has no root endpoint (client.ping() fails there); cluster health works everywhere.
    const health = await this.call('ping', () => this.client.cluster.health({ timeout: '2s' }));
    if (health.status === 'red') throw new SearchIndexUnavailable('Elasticsearch cluster health is red');
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private indexOperation(item: IndexedListing): BulkItem {
    const { version, ...fields } = projectListing(item);
    return [
      { index: { _id: item.listing.id, version, version_type: 'external' } },
      { ...fields, reso: resoDocument(item.listing), listing: item.listing },
    ];
  }

  /**
   * One bulk request; each item's result, in order. Through the alias (`viaAlias`), Elasticsearch must find the
   * alias: a write never creates an index under the alias's name (which would block the alias for good) when it runs
   * before `open()` or after a drop. `visible`: resolves once searches see the written documents (below).
   */
  private async bulk(index: string, items: BulkItem[], viaAlias = false, visible = false): Promise<BulkResult[]> {
    const response = await this.call('bulk write', () =>
      this.client.bulk({
        index,
        operations: items.flat() as estypes.BulkRequest['operations'],
        ...(viaAlias ? { require_alias: true } : {}),
        ...(visible ? { refresh: true } : {}),
      }),
    );
    const results = response.items.map((item) => Object.values(item)[0]);
    // A version conflict means this version (or a newer one) was written by someone else (the event indexer), and a
    // request whose writes all conflicted may refresh nothing: that write may not be searchable yet. Rare.
    if (visible && results.some((r) => r?.status === 409))
      await this.call('refresh', () => this.client.indices.refresh({ index }));
    return results;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isTransient(err))
        throw new SearchIndexUnavailable(`Elasticsearch did not ${what}: ${(err as Error).message}`, { cause: err });
      throw err;
    }
  }
}
