import type { ListingSearchQuery, ListingSortField } from '@estate/contracts/listings';
import { AppError } from '@estate/platform/errors';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import type { ListingSearch, ListingSort, SearchAfter } from '@estate/search';

/** Newest first without `q` or `near` (the order the list always had); best match first with `q`, nearest with `near`. */
const DEFAULT_SORT: ListingSort = { by: 'createdAt', direction: 'desc' };

export function sortOf(query: Pick<ListingSearchQuery, 'sort' | 'q' | 'near'>): ListingSort {
  if (query.sort) {
    const descending = query.sort.startsWith('-');
    return {
      by: (descending ? query.sort.slice(1) : query.sort) as ListingSortField | 'distance',
      direction: descending ? 'desc' : 'asc',
    };
  }
  if (query.q !== undefined) return { by: 'relevance' };
  return query.near ? { by: 'distance', direction: 'asc' } : DEFAULT_SORT;
}

const sortName = (sort: ListingSort): string =>
  sort.by === 'relevance' ? 'relevance' : `${sort.direction === 'desc' ? '-' : ''}${sort.by}`;

/**
 * The cursor names the order it was made for: continuing it under another sort would start from a
 * position that means nothing there, so that is refused like any cursor we did not issue.
 */
function afterOf(raw: string, sort: ListingSort, accountId: string): SearchAfter {
  const state = decodeCursor(raw, accountId)!;
  const [order, value, ...window] = Array.isArray(state.v) ? (state.v as unknown[]) : [];
  const key = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;
  const valid =
    order === sortName(sort) &&
    (typeof value === 'number' ? Number.isFinite(value) : value === null && sort.by !== 'relevance') &&
    (window.length === 0 ||
      (sort.by === 'relevance' &&
        window.length === 2 &&
        key(window[0]) &&
        (window[1] === null || (key(window[1]) && (window[1] as number) > (window[0] as number)))));
  if (!valid)
    throw new AppError(
      'invalid_cursor',
      'The cursor belongs to another sort order or is not one this API issued; start again without it',
    );
  return {
    value: value as number | null,
    id: state.id,
    ...(window.length === 2 ? { window: window as [number, number | null] } : {}),
  };
}

/** The position after the last item, with the order it belongs to, for the account's next page. */
export function cursorOf(next: SearchAfter | null, sort: ListingSort, accountId: string): string | null {
  return next
    ? encodeCursor({ v: [sortName(sort), next.value, ...(next.window ?? [])], id: next.id }, accountId)
    : null;
}

/** The validated query parameters as a search of the index, scoped to the caller's account. */
export function toIndexSearch(accountId: string, query: ListingSearchQuery): ListingSearch {
  const sort = sortOf(query);
  const { near, radiusKm } = query;
  return {
    accountId,
    sort,
    limit: query.limit,
    facets: query.facets ?? [],
    ...(query.cursor ? { after: afterOf(query.cursor, sort, accountId) } : {}),
    filters: {
      status: query.status,
      propertyType: query.propertyType,
      city: query.city,
      stateOrProvince: query.stateOrProvince,
      postalCode: query.postalCode,
      source: query.source,
      externalId: query.externalId,
      minPrice: query.minPrice,
      maxPrice: query.maxPrice,
      minBedrooms: query.minBedrooms,
      minBathrooms: query.minBathrooms,
      minLivingArea: query.minLivingArea,
      updatedSince: query.updatedSince !== undefined ? Date.parse(query.updatedSince) : undefined,
      // The contract refuses `near` without `radiusKm` and the other way round.
      near: near && radiusKm !== undefined ? { ...near, radiusKm } : undefined,
      bbox: query.bbox,
      q: query.q,
    },
  };
}
