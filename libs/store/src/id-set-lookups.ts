import type { Filter, FindOptions } from './document-store';
import { isPlainObject } from './pull-matcher';

/** Lookups by `_id` one `find` sends at once when it asks for a set of ids one by one. */
const LOOKUPS_IN_FLIGHT = 8;

/**
 * The per-id filters of a `find` for a set of ids (`{ _id: { $in: [...] }, ...others }`), on an engine that does not
 * look a set of ids up in its `_id` index (FerretDB v1 pushes only equalities down to PostgreSQL; it reads every
 * document the rest of the filter matches, the whole collection at worst, and tests `$in` in its own process). Each
 * id becomes a filter of its own, with the other conditions: a lookup by `_id`. Null when the filter names no such
 * set, or when the find sorts or skips, which only the engine would apply to the whole set.
 */
export function idSetLookups(engineFilter: Filter, options: FindOptions): Filter[] | null {
  if (options.sort || options.skip) return null;
  const ids = engineFilter._id;
  if (!isPlainObject(ids) || Object.keys(ids).length !== 1 || !Array.isArray(ids.$in)) return null;
  const unique = [...new Set(ids.$in as unknown[])];
  if (unique.some((id) => typeof id !== 'string')) return null;
  return unique.map((id) => ({ ...engineFilter, _id: id }));
}

/** Runs `lookup` on every filter, a few at a time; what each found, in the filters' order (absent ones left out). */
export async function lookUpEach<D>(filters: Filter[], lookup: (filter: Filter) => Promise<D | null>): Promise<D[]> {
  const found: Array<D | null> = new Array<D | null>(filters.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < filters.length) {
      const i = next++;
      found[i] = await lookup(filters[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUPS_IN_FLIGHT, filters.length) }, worker));
  return found.filter((d): d is D => d !== null);
}
