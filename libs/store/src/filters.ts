import { isDeepStrictEqual } from 'node:util';
import type { Filter } from './document-store';

/**
 * One filter matching what all of `filters` match: their conditions side by side (an operator such as `$or` too,
 * when only one of them has it), or `$and` when two name one field differently. Side by side, the equalities stay
 * where an engine can use them: FerretDB v1, the test engine, pushes a top-level equality down to its backend's
 * indexes but nothing of an `$and` (it would read the whole collection for it).
 */
export function allOf(filters: Filter[]): Filter {
  const flat: Filter = {};
  for (const f of filters)
    for (const [key, value] of Object.entries(f)) {
      if (key in flat && !isDeepStrictEqual(flat[key], value)) return { $and: filters };
      flat[key] = value;
    }
  return flat;
}
