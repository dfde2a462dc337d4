import { isDeepStrictEqual } from 'node:util';
import type { Filter } from './document-store';

/**
 * One filter matching what all of `filters` match: their conditions side by side (an operator such as `$or` too,
 * when only one of them has it), or `$and` when two name one field differently. Side by side, the equalities stay
 * where an engine can use them: FerretDB v1, the test engine, pushes a top-level equality down to its backend's
 * indexes but nothing of an `$and` (it would read the whole collection for it). Absent filters (no keyset cursor on a
 * first page) add nothing.
 */
export function allOf(filters: Array<Filter | undefined>): Filter {
  const present = filters.filter((f): f is Filter => f !== undefined);
  const flat: Filter = {};
  for (const f of present)
    for (const [key, value] of Object.entries(f)) {
      if (key in flat && !isDeepStrictEqual(flat[key], value)) return { $and: present };
      flat[key] = value;
    }
  return flat;
}
