import { omittedFields, type Filter, type ReadOptions, type SortSpec } from './document-store';

/** Both engines key documents by `_id`; the port speaks `id`. These translate at the adapter edge. */
export function toEngineFilter(filter: Filter): Filter {
  const out: Filter = {};
  for (const [key, value] of Object.entries(filter)) {
    if ((key === '$or' || key === '$and') && Array.isArray(value)) {
      out[key] = value.map((f) => toEngineFilter(f as Filter));
    } else {
      out[key === 'id' ? '_id' : key] = value;
    }
  }
  return out;
}

export function toEngineSort(sort: SortSpec): SortSpec {
  const out: SortSpec = {};
  for (const [key, dir] of Object.entries(sort)) out[key === 'id' ? '_id' : key] = dir;
  return out;
}

export function fromEngineDoc<T>(doc: Record<string, unknown> | null | undefined): T | null {
  if (!doc) return null;
  const { _id, ...rest } = doc;
  return { ...rest, id: _id } as T;
}

/** The engine projection leaving out the fields of `omit`; undefined when nothing is left out. */
export function toEngineProjection(options: ReadOptions | undefined): Record<string, 0> | undefined {
  const omit = omittedFields(options);
  return omit.length > 0 ? Object.fromEntries(omit.map((field) => [field, 0 as const])) : undefined;
}
