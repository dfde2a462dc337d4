import { badRequest } from './errors';
import { parseFilter, type FieldFilter, type FilterField, type IndexValue } from './filter';
import type { FieldMapping } from './mapping';

/** The query options of a collection request, checked against a resource's served fields. */

export interface OrderKey {
  field: string;
  direction: 'asc' | 'desc';
}

export interface CollectionQuery {
  filter?: FieldFilter;
  /** Field names to answer with; undefined: all of them. */
  select?: string[];
  /** The client's keys, then the resource key as the last tiebreaker. */
  orderBy: OrderKey[];
  top?: number;
  skip: number;
  count: boolean;
  expand: string[];
  /** Canonical text of what a page token is bound to (filter and order). */
  shape: string;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** With a page of 1000, the deepest first page stays inside Elasticsearch's window of 10,000. */
export const MAX_SKIP = 9_000;
export const MAX_ORDER_KEYS = 3;

/** System query options the server answers; any other `$` option is refused rather than ignored. */
const KNOWN = new Set([
  '$filter',
  '$select',
  '$orderby',
  '$top',
  '$skip',
  '$count',
  '$expand',
  '$skiptoken',
  '$format',
]);

export interface QueryResource {
  key: string;
  fields: readonly FieldMapping<never>[];
  /** Navigation properties `$expand` may name. */
  expandable?: readonly string[];
}

const integer = (name: string, raw: string, max: number): number => {
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > max)
    throw badRequest(`${name} must be an integer from 0 to ${max}`, name);
  return Number(raw);
};

export function filterFields(resource: QueryResource): Map<string, FilterField> {
  return new Map(resource.fields.filter((f) => f.indexed).map((f) => [f.name, f]));
}

export function parseCollectionQuery(
  options: Record<string, string | undefined>,
  resource: QueryResource,
  now: number,
): CollectionQuery {
  for (const name of Object.keys(options))
    if (name.startsWith('$') && !KNOWN.has(name)) throw badRequest(`The query option ${name} is not supported`, name);
  const served = new Map(resource.fields.map((f) => [f.name, f]));
  const indexed = filterFields(resource);

  let select: string[] | undefined;
  if (options.$select !== undefined && options.$select.trim() !== '*') {
    select = options.$select.split(',').map((s) => s.trim());
    for (const name of select) {
      if (name === '') throw badRequest('$select has an empty item: name fields separated by commas', '$select');
      if (!served.has(name)) throw badRequest(`$select: ${name} is not a field of this resource`, name);
    }
  }

  const orderBy: OrderKey[] = [];
  if (options.$orderby !== undefined) {
    for (const part of options.$orderby.split(',')) {
      const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(asc|desc))?\s*$/i.exec(part);
      if (!match) throw badRequest(`$orderby: cannot read "${part.trim()}"`, '$orderby');
      const field = indexed.get(match[1]);
      if (!field || field.collection)
        throw badRequest(`$orderby: ${match[1]} is not a field that can be sorted on`, match[1]);
      if (orderBy.some((k) => k.field === field.name)) continue;
      orderBy.push({ field: field.name, direction: (match[2]?.toLowerCase() ?? 'asc') as 'asc' | 'desc' });
    }
  }
  const clientKeys = orderBy.filter((k) => k.field !== resource.key);
  if (clientKeys.length > MAX_ORDER_KEYS)
    throw badRequest(`$orderby takes at most ${MAX_ORDER_KEYS} fields`, '$orderby');
  const keyOrder = orderBy.find((k) => k.field === resource.key);
  // The key breaks ties, in the direction of the last client key (so one index serves the whole order).
  const tiebreak: OrderKey = keyOrder ?? {
    field: resource.key,
    direction: clientKeys[clientKeys.length - 1]?.direction ?? 'asc',
  };
  const order = [...clientKeys, tiebreak];

  const expand = options.$expand === undefined ? [] : options.$expand.split(',').map((s) => s.trim());
  for (const name of expand) {
    if ((resource.expandable ?? []).includes(name)) continue;
    const nested = /^(\w+)\s*\(/.exec(name)?.[1];
    if (nested && (resource.expandable ?? []).includes(nested))
      throw badRequest(`$expand: options inside ${nested}(...) are not supported; expand ${nested} alone`, name);
    throw badRequest(`$expand: ${name} cannot be expanded`, name);
  }

  const count = options.$count === undefined ? false : options.$count.toLowerCase() === 'true';
  if (options.$count !== undefined && !/^(true|false)$/i.test(options.$count))
    throw badRequest('$count must be true or false', '$count');

  const filter =
    options.$filter === undefined || options.$filter.trim() === ''
      ? undefined
      : parseFilter(options.$filter, { fields: indexed, now });
  return {
    ...(filter ? { filter } : {}),
    ...(select ? { select } : {}),
    orderBy: order,
    ...(options.$top !== undefined ? { top: integer('$top', options.$top, 2 ** 31 - 1) } : {}),
    skip: options.$skip === undefined ? 0 : integer('$skip', options.$skip, MAX_SKIP),
    count,
    expand,
    shape: JSON.stringify([options.$filter ?? '', order]),
  };
}

/** `Prefer: odata.maxpagesize=N` (also inside a list of preferences); the default without it. */
export function preferredPageSize(prefer: string | string[] | undefined): { size: number; applied: boolean } {
  const text = Array.isArray(prefer) ? prefer.join(',') : (prefer ?? '');
  const match = /(?:^|[,;\s])odata\.maxpagesize\s*=\s*"?(\d{1,9})"?/i.exec(text);
  if (!match) return { size: DEFAULT_PAGE_SIZE, applied: false };
  return { size: Math.min(Math.max(Number(match[1]), 1), MAX_PAGE_SIZE), applied: true };
}

/** `'abc'` or `ListingKey='abc'` -> `abc`; null when the segment is not a key predicate. */
export function keyPredicate(segment: string, key: string): string | null {
  const match = new RegExp(`^(?:${key}=)?'((?:[^']|'')*)'$`).exec(segment);
  return match ? match[1].replace(/''/g, "'") : null;
}

/**
 * The keyset condition "after this row" for an order, as a filter both index adapters answer: one tuple comparison
 * when every key is required and of one direction (an index range), otherwise its expansion, where a missing value
 * sorts last in either direction.
 */
export function afterFilter(
  order: readonly OrderKey[],
  values: readonly IndexValue[],
  required: (field: string) => boolean,
): FieldFilter {
  const uniform = order.every((k) => k.direction === order[0].direction && required(k.field));
  if (uniform) {
    return {
      kind: 'tuple',
      fields: order.map((k) => k.field),
      op: order[0].direction === 'asc' ? 'gt' : 'lt',
      values: [...values],
    };
  }
  const alternatives: FieldFilter[] = [];
  for (let i = 0; i < order.length; i++) {
    const equal: FieldFilter[] = order
      .slice(0, i)
      .map((k, j) => ({ kind: 'compare', field: k.field, op: 'eq', value: values[j] }));
    const { field, direction } = order[i];
    const value = values[i];
    let beyond: FieldFilter;
    if (value === null) beyond = { kind: 'const', value: false };
    else {
      const cmp: FieldFilter = { kind: 'compare', field, op: direction === 'asc' ? 'gt' : 'lt', value };
      beyond = required(field) ? cmp : { kind: 'or', of: [cmp, { kind: 'compare', field, op: 'eq', value: null }] };
    }
    alternatives.push(equal.length === 0 ? beyond : { kind: 'and', of: [...equal, beyond] });
  }
  return { kind: 'or', of: alternatives };
}
