import { assertRole, type RequestContext } from '@estate/platform/auth';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import {
  badRequest,
  ENTITY_EVENT_FIELDS,
  entityEventRecord,
  parseCollectionQuery,
  type EntityEventSource,
  type FieldFilter,
  type QueryResource,
} from '@estate/reso';
import type { FeedDoc, FeedRepository } from './repositories/feed.repository';
import { positionAt } from './sequence.rules';

/** Keys that read the RESO Web API (SPEC §13): as for Property, an agent key may not. */
const READERS = ['admin', 'integration'] as const;

/**
 * The change feed's events that are about a RESO resource: a listing (Property) or a photo that became ready (Media).
 * Lead, activity and job events are none of them (and an integration key reads no pipeline: decision 0077).
 */
export const ENTITY_EVENT_TYPES: Readonly<Record<string, 'Property' | 'Media'>> = {
  'listing.created': 'Property',
  'listing.updated': 'Property',
  'listing.deleted': 'Property',
  'media.ready': 'Media',
};

const RESOURCE: QueryResource = {
  key: 'EntityEventSequence',
  fields: ENTITY_EVENT_FIELDS as QueryResource['fields'],
};

type Row = Record<string, unknown>;
/** Bounds on EntityEventSequence, as the store's range operators. */
type Range = Record<string, number>;

export interface EntityEventPage {
  options: Record<string, string | undefined>;
  pageSize: number;
  serviceRoot: string;
}

/**
 * The RESO EntityEvent resource (RCP-027) over the account's change feed: each listing or photo event gets its
 * EntityEventSequence when it is first read here (numbered in feed order once settled, decision 0106), and the
 * collection is read by that number, with `$filter` ranges on it, `$orderby`, `$top` and keyset nextLinks.
 */
export class EntityEventService {
  constructor(private readonly deps: { feed: FeedRepository; clock: () => Date; settleMs: number }) {}

  async list(ctx: RequestContext, request: EntityEventPage): Promise<{ body: Row }> {
    assertRole(ctx.who, READERS, 'read the RESO Web API');
    const accountId = ctx.who.accountId;
    const now = this.deps.clock().getTime();
    for (const name of Object.keys(request.options))
      if (name === '$expand') throw badRequest('$expand: EntityEvent has nothing to expand', name);
    const query = parseCollectionQuery(
      Object.fromEntries(Object.entries(request.options).filter(([k]) => k !== '$skiptoken')),
      RESOURCE,
      now,
    );
    const direction = query.orderBy[0].direction === 'desc' ? -1 : 1;
    const range = query.filter ? rangeOf(query.filter) : {};
    const scope = `${accountId}\nreso:EntityEvent\n${query.shape}`;
    const position = this.position(request.options.$skiptoken, scope);

    await this.deps.feed.number(accountId, Object.keys(ENTITY_EVENT_TYPES), positionAt(now - this.deps.settleMs));

    const remaining = position ? position.remaining : (query.top ?? null);
    const limit = Math.min(request.pageSize, remaining ?? Number.MAX_SAFE_INTEGER);
    const where = position ? narrow(range, direction === 1 ? '$gt' : '$lt', position.last) : range;
    const found =
      limit === 0
        ? []
        : await this.deps.feed.numbered(accountId, where, {
            direction,
            limit: limit + 1,
            skip: position ? 0 : query.skip,
          });
    const items = direction === 1 ? consecutive(found) : found;
    const page = items.slice(0, limit);
    const left = remaining === null ? null : remaining - page.length;
    const more = items.length > limit && (left === null || left > 0);
    const rows = page.map((doc) => {
      const record = entityEventRecord(sourceOf(doc, request.serviceRoot)) as Row;
      return query.select ? Object.fromEntries(query.select.map((name) => [name, record[name]])) : record;
    });
    const body: Row = {
      '@odata.context': `${request.serviceRoot}/$metadata#EntityEvent${query.select ? `(${query.select.join(',')})` : ''}`,
      ...(query.count ? { '@odata.count': await this.deps.feed.countNumbered(accountId, range) } : {}),
      value: rows,
    };
    if (more) {
      const token = encodeCursor({ v: [left, page[page.length - 1].seq!], id: 'EntityEvent' }, scope);
      body['@odata.nextLink'] = `${request.serviceRoot}/EntityEvent?${nextQuery(request.options, token)}`;
    }
    return { body };
  }

  private position(token: string | undefined, scope: string): { remaining: number | null; last: number } | undefined {
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
    if (!state || !Array.isArray(v) || (v[0] !== null && typeof v[0] !== 'number') || typeof v[1] !== 'number')
      throw badRequest('$skiptoken is not one this service issued for this query', '$skiptoken');
    return { remaining: v[0] as number | null, last: v[1] };
  }
}

function sourceOf(doc: FeedDoc, serviceRoot: string): EntityEventSource {
  const resourceName = ENTITY_EVENT_TYPES[doc.type] ?? 'Property';
  const data = doc.data as { id?: string; listingId?: string };
  const key = String(data.id ?? '');
  return {
    sequence: doc.seq!,
    resourceName,
    key,
    listingKey: resourceName === 'Media' ? String(data.listingId ?? '') : key,
    type: doc.type,
    createdAt: doc.createdAt,
    serviceRoot,
  };
}

/**
 * Ascending pages stop before a gap: numbers are given one after another, so a missing one is being written by a
 * numbering pass that has not finished, and the next page starts from it rather than past it.
 */
function consecutive(docs: FeedDoc[]): FeedDoc[] {
  let end = 1;
  while (end < docs.length && docs[end].seq === docs[end - 1].seq! + 1) end++;
  return docs.slice(0, end);
}

/** Narrows a range by one more bound (the tighter of two bounds of a side wins). */
function narrow(range: Range, op: string, value: number): Range {
  const out = { ...range };
  const lower = op === '$gt' || op === '$gte';
  const sameSide = lower ? ['$gt', '$gte'] : ['$lt', '$lte'];
  const current = sameSide.map((k) => [k, out[k]] as const).find(([, v]) => v !== undefined);
  if (current) {
    const [k, v] = current;
    const tighter = lower ? value > v || (value === v && op === '$gt') : value < v || (value === v && op === '$lt');
    if (!tighter) return out;
    delete out[k];
  }
  out[op] = value;
  return out;
}

const OPS: Record<string, string[]> = { gt: ['$gt'], ge: ['$gte'], lt: ['$lt'], le: ['$lte'], eq: ['$gte', '$lte'] };

/** `$filter` on EntityEventSequence as a range: comparisons `eq gt ge lt le`, joined by `and`. */
function rangeOf(filter: FieldFilter): Range {
  if (filter.kind === 'and') return filter.of.map(rangeOf).reduce(merge, {});
  if (filter.kind === 'compare' && filter.field === 'EntityEventSequence' && typeof filter.value === 'number') {
    const ops = OPS[filter.op];
    if (ops) return ops.reduce((r, op) => narrow(r, op, filter.value as number), {} as Range);
  }
  throw badRequest(
    '$filter on EntityEvent: comparisons of EntityEventSequence (eq, gt, ge, lt, le) joined by and',
    '$filter',
  );
}

function merge(a: Range, b: Range): Range {
  return Object.entries(b).reduce((r, [op, v]) => narrow(r, op, v), a);
}

/** The next page's query: the same options, without what the token now carries (`$top`, `$skip`). */
function nextQuery(options: Record<string, string | undefined>, token: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options))
    if (value !== undefined && !['$top', '$skip', '$skiptoken'].includes(name)) params.set(name, value);
  params.set('$skiptoken', token);
  return params.toString().replace(/%24/g, '$');
}
