import { encodeCursor, type CursorState, type SortOrder } from '@estate/platform/pagination';
import type { Filter, SortSpec } from './document-store';

function valueAt(doc: Record<string, unknown>, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), doc);
}

/** Sort spec and the filter for the items after the cursor (ties broken by id). */
export function keyset(
  order: SortOrder,
  cursor: CursorState | undefined,
): { sort: SortSpec; after: Filter | undefined } {
  const sort: SortSpec =
    order.field === 'id' ? { id: order.direction } : { [order.field]: order.direction, id: order.direction };
  if (!cursor) return { sort, after: undefined };
  const cmp = order.direction === 1 ? '$gt' : '$lt';
  if (order.field === 'id') return { sort, after: { id: { [cmp]: cursor.id } } };
  if (cursor.v === null || cursor.v === undefined) {
    // Missing values sort first ascending and last descending in both engines.
    return order.direction === 1
      ? {
          sort,
          after: {
            $or: [{ [order.field]: { $exists: false }, id: { $gt: cursor.id } }, { [order.field]: { $exists: true } }],
          },
        }
      : { sort, after: { [order.field]: { $exists: false }, id: { $lt: cursor.id } } };
  }
  const tie = { [order.field]: cursor.v, id: { [cmp]: cursor.id } };
  const beyond = { [order.field]: { [cmp]: cursor.v } };
  const after =
    order.direction === -1 ? { $or: [beyond, tie, { [order.field]: { $exists: false } }] } : { $or: [beyond, tie] };
  return { sort, after };
}

/** From `limit + 1` fetched items: the page and the cursor of the next one, issued to the account `scope`. */
export function pageOf<T extends { id: string }>(
  fetched: T[],
  limit: number,
  order: SortOrder,
  scope: string,
): { items: T[]; nextCursor: string | null } {
  const items = fetched.slice(0, limit);
  if (fetched.length <= limit) return { items, nextCursor: null };
  const last = items[items.length - 1] as unknown as Record<string, unknown>;
  return {
    items,
    nextCursor: encodeCursor(
      {
        v: order.field === 'id' ? null : (valueAt(last, order.field) ?? null),
        id: last.id as string,
      },
      scope,
    ),
  };
}
