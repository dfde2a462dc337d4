import type { Listing } from '@estate/contracts/listings';
import type { Media } from '@estate/contracts/media';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import {
  afterFilter,
  badRequest,
  MEDIA_FIELDS,
  mediaRecord,
  ODataError,
  parseCollectionQuery,
  parseFilter,
  PROPERTY_FIELDS,
  propertyField,
  propertyIndexRecord,
  propertyRecord,
  type CollectionQuery,
  type FieldFilter,
  type IndexValue,
  type QueryResource,
} from '@estate/reso';
import type { MediaReader } from './clients/media.client';
import type { ListingIndexRepository } from './repositories/listing-index.repository';

/** Keys that read listings through the RESO Web API (SPEC §13): an agent key may not. */
export const RESO_READERS = ['admin', 'integration'] as const;

const PROPERTY: QueryResource = {
  key: 'ListingKey',
  fields: PROPERTY_FIELDS as QueryResource['fields'],
  expandable: ['Media'],
};

type Row = Record<string, unknown>;

export const MAX_MEDIA_LISTINGS = 100;
const MEDIA_FILTER_FIELDS = new Map([
  ['ResourceRecordKey', { name: 'ResourceRecordKey', type: 'Edm.String' as const }],
]);

export interface PageRequest {
  /** The query options as sent (`$filter`, `$top`, …, `$skiptoken`). */
  options: Record<string, string | undefined>;
  pageSize: number;
  /** `https://api.example.com/reso/odata`: links and media URLs are absolute. */
  serviceRoot: string;
  baseUrl: string;
}

export interface Page {
  body: Row;
}

/** What a page token holds: what is left of `$top` (null: no limit) and the last row's order values. */
type Position = { remaining: number | null; values: IndexValue[]; key: string };

/**
 * The RESO Web API's Property resource over the listing search index: the query options become a field query, the
 * listings found become DD records through the mapping table, and the next page is a signed keyset position
 * bound to the account, the filter and the order.
 */
export class ResoService {
  constructor(private readonly deps: { index: ListingIndexRepository; media: MediaReader; clock: () => Date }) {}

  async properties(ctx: RequestContext, request: PageRequest): Promise<Page> {
    assertRole(ctx.who, RESO_READERS, 'read the RESO Web API');
    const query = parseCollectionQuery(
      Object.fromEntries(Object.entries(request.options).filter(([k]) => k !== '$skiptoken')),
      PROPERTY,
      this.deps.clock().getTime(),
    );
    const scope = `${ctx.who.accountId}\nreso:Property\n${query.shape}`;
    const position = this.position(request.options.$skiptoken, scope);
    const remaining = position ? position.remaining : (query.top ?? null);
    const limit = Math.min(request.pageSize, remaining ?? Number.MAX_SAFE_INTEGER);
    const after: FieldFilter | undefined = position
      ? afterFilter(query.orderBy, [...position.values, position.key], (f) => propertyField.get(f)?.required ?? false)
      : undefined;
    const where = and(query.filter, after);
    // The count is of the filter's matches: on a later page (a position added to the filter) it is asked apart.
    const found = await this.deps.index.select({
      accountId: ctx.who.accountId,
      ...(where ? { where } : {}),
      order: query.orderBy,
      skip: position ? 0 : query.skip,
      limit: limit === 0 ? 0 : limit + 1,
      count: query.count && !position,
    });
    const total = query.count && position ? await this.matches(ctx.who.accountId, query) : found.total;
    const items = found.items.slice(0, limit);
    const left = remaining === null ? null : remaining - items.length;
    const more = found.items.length > limit && (left === null || left > 0);
    const rows = await this.rows(ctx, items, query, request.baseUrl);
    const body: Row = {
      '@odata.context': `${request.serviceRoot}/$metadata#Property${query.select ? `(${query.select.join(',')})` : ''}`,
      ...(total !== undefined ? { '@odata.count': total } : {}),
      value: rows,
    };
    if (more) {
      const last = propertyIndexRecord(items[items.length - 1]);
      const values = query.orderBy.slice(0, -1).map((k) => last[k.field] as IndexValue);
      const token = encodeCursor({ v: [left, ...values], id: items[items.length - 1].id }, scope);
      body['@odata.nextLink'] = `${request.serviceRoot}/Property?${nextQuery(request.options, token)}`;
    }
    return { body };
  }

  /**
   * `Property/$count`: how many of the account's listings match `$filter`. As OData asks of `/$count`, `$top`,
   * `$skip` and `$orderby` do not change it.
   */
  async propertyCount(ctx: RequestContext, options: Record<string, string | undefined>): Promise<number> {
    assertRole(ctx.who, RESO_READERS, 'read the RESO Web API');
    const filter = options.$filter;
    const query = parseCollectionQuery(
      filter === undefined ? {} : { $filter: filter },
      PROPERTY,
      this.deps.clock().getTime(),
    );
    return this.matches(ctx.who.accountId, query);
  }

  /** How many of the account's listings the query's filter matches. */
  private async matches(accountId: string, query: Pick<CollectionQuery, 'filter' | 'orderBy'>): Promise<number> {
    const found = await this.deps.index.select({
      accountId,
      ...(query.filter ? { where: query.filter } : {}),
      order: query.orderBy,
      skip: 0,
      limit: 0,
      count: true,
    });
    return found.total ?? 0;
  }

  async property(
    ctx: RequestContext,
    key: string,
    options: Record<string, string | undefined>,
    roots: { serviceRoot: string; baseUrl: string },
  ): Promise<Row> {
    assertRole(ctx.who, RESO_READERS, 'read the RESO Web API');
    for (const name of Object.keys(options))
      if (['$filter', '$orderby', '$top', '$skip', '$count', '$skiptoken'].includes(name))
        throw badRequest(`${name} does not apply to a single entity`, name);
    const query = parseCollectionQuery(options, PROPERTY, this.deps.clock().getTime());
    const listing = await this.find(ctx, key);
    const [row] = await this.rows(ctx, [listing], query, roots.baseUrl);
    return { '@odata.context': `${roots.serviceRoot}/$metadata#Property/$entity`, ...row };
  }

  async propertyMedia(
    ctx: RequestContext,
    key: string,
    options: Record<string, string | undefined>,
    roots: { serviceRoot: string; baseUrl: string },
  ): Promise<Row> {
    assertRole(ctx.who, RESO_READERS, 'read the RESO Web API');
    for (const name of Object.keys(options))
      if (name.startsWith('$') && name !== '$select' && name !== '$format')
        throw badRequest(`${name} is not supported on Property('key')/Media`, name);
    const select = options.$select?.split(',').map((s) => s.trim());
    for (const name of select ?? [])
      if (!MEDIA_FIELDS.some((f) => f.name === name))
        throw badRequest(`$select: ${name} is not a field of Media`, name);
    const listing = await this.find(ctx, key);
    const media = await this.deps.media.forListings(ctx.who, [listing.id], ctx.requestId);
    return {
      '@odata.context': `${roots.serviceRoot}/$metadata#Media`,
      value: mediaRows(media[listing.id] ?? [], roots.baseUrl, select),
    };
  }

  /**
   * The Media collection, for the photos of given listings: `$filter` names them (`ResourceRecordKey eq 'k'` or
   * `in (…)`, at most {@link MAX_MEDIA_LISTINGS}); the answer is their media by listing and `Order`, in one page.
   */
  async media(
    ctx: RequestContext,
    options: Record<string, string | undefined>,
    roots: { serviceRoot: string; baseUrl: string },
  ): Promise<Row> {
    assertRole(ctx.who, RESO_READERS, 'read the RESO Web API');
    for (const name of Object.keys(options))
      if (name.startsWith('$') && !['$filter', '$select', '$top', '$format'].includes(name))
        throw badRequest(`${name} is not supported on Media`, name);
    const select = options.$select?.split(',').map((s) => s.trim());
    for (const name of select ?? [])
      if (!MEDIA_FIELDS.some((f) => f.name === name))
        throw badRequest(`$select: ${name} is not a field of Media`, name);
    const top = options.$top === undefined ? undefined : Number(options.$top);
    if (top !== undefined && !(Number.isInteger(top) && top >= 0)) throw badRequest('$top must be an integer', '$top');
    const filter =
      options.$filter === undefined
        ? undefined
        : parseFilter(options.$filter, { fields: MEDIA_FILTER_FIELDS, now: this.deps.clock().getTime() });
    const keys =
      filter?.kind === 'compare' && filter.op === 'eq' && typeof filter.value === 'string'
        ? [filter.value]
        : filter?.kind === 'in'
          ? filter.values.map(String)
          : undefined;
    if (!keys)
      throw badRequest(
        "Media is read by listing: $filter=ResourceRecordKey eq 'key' or ResourceRecordKey in ('k1', 'k2')",
        '$filter',
      );
    if (keys.length > MAX_MEDIA_LISTINGS)
      throw badRequest(`Media is read for at most ${MAX_MEDIA_LISTINGS} listings at once`, '$filter');
    const listings = await this.deps.index.select({
      accountId: ctx.who.accountId,
      where: { kind: 'in', field: 'ListingKey', values: keys },
      order: [{ field: 'ListingKey', direction: 'asc' }],
      skip: 0,
      limit: keys.length,
      count: false,
    });
    const ids = listings.items.map((l) => l.id);
    const media = await this.deps.media.forListings(ctx.who, ids, ctx.requestId);
    const rows = ids.flatMap((id) => mediaRows(media[id] ?? [], roots.baseUrl, select));
    return {
      '@odata.context': `${roots.serviceRoot}/$metadata#Media${select ? `(${select.join(',')})` : ''}`,
      value: top === undefined ? rows : rows.slice(0, top),
    };
  }

  private async find(ctx: RequestContext, key: string): Promise<Listing> {
    const found = await this.deps.index.select({
      accountId: ctx.who.accountId,
      where: { kind: 'compare', field: 'ListingKey', op: 'eq', value: key },
      order: [{ field: 'ListingKey', direction: 'asc' }],
      skip: 0,
      limit: 1,
      count: false,
    });
    const listing = found.items[0];
    if (!listing) throw new ODataError(404, 'NotFound', `No Property has the key '${key}'`, 'ListingKey');
    return listing;
  }

  private position(token: string | undefined, scope: string): Position | undefined {
    if (token === undefined) return undefined;
    let state;
    try {
      state = decodeCursor(token, scope);
    } catch {
      throw badRequest(
        '$skiptoken is not one this service issued for this query; start again without it',
        '$skiptoken',
      );
    }
    const v = state?.v;
    if (!state || !Array.isArray(v) || (v[0] !== null && typeof v[0] !== 'number'))
      throw badRequest('$skiptoken is not one this service issued for this query', '$skiptoken');
    return { remaining: v[0] as number | null, values: v.slice(1) as IndexValue[], key: state.id };
  }

  private async rows(
    ctx: RequestContext,
    listings: Listing[],
    query: CollectionQuery,
    baseUrl: string,
  ): Promise<Row[]> {
    const media = query.expand.includes('Media')
      ? await this.deps.media.forListings(
          ctx.who,
          listings.map((l) => l.id),
          ctx.requestId,
        )
      : undefined;
    return listings.map((listing) => {
      const record = propertyRecord(listing) as Row;
      const row: Row = query.select ? Object.fromEntries(query.select.map((name) => [name, record[name]])) : record;
      if (media) row.Media = mediaRows(media[listing.id] ?? [], baseUrl);
      return row;
    });
  }
}

/** Ready images and tours, in `Order`. */
function mediaRows(items: readonly Media[], baseUrl: string, select?: string[]): Row[] {
  return items
    .filter((m) => m.status === 'ready')
    .sort((a, b) => a.order - b.order)
    .map((media) => {
      const record = mediaRecord({ media, baseUrl }) as Row;
      return select ? Object.fromEntries(select.map((name) => [name, record[name]])) : record;
    });
}

function and(a: FieldFilter | undefined, b: FieldFilter | undefined): FieldFilter | undefined {
  if (a && b) return { kind: 'and', of: [a, b] };
  return a ?? b;
}

/** The next page's query: the same options, without what the token now carries (`$top`, `$skip`). */
function nextQuery(options: Record<string, string | undefined>, token: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options))
    if (value !== undefined && !['$top', '$skip', '$skiptoken'].includes(name)) params.set(name, value);
  params.set('$skiptoken', token);
  return params.toString().replace(/%24/g, '$');
}
