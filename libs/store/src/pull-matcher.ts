/**
 * `$pull` conditions evaluated in process, for the adapters whose engine cannot: FerretDB v1 (which pulls by
 * whole-element equality only) and SQLite (whose updates are applied to the parsed document).
 */
type Raw = Record<string, unknown>;

export const isPlainObject = (v: unknown): v is Raw =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  !(v instanceof Date) &&
  Object.getPrototypeOf(v) === Object.prototype;

export function getPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date)
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => valuesEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => valuesEqual(a[k], b[k]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object' && 'equals' in a && typeof a.equals === 'function')
    return a.equals(b) as boolean;
  return a === b;
}

const isOperatorObject = (v: unknown): v is Raw =>
  isPlainObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

/** The `$pull` condition subset of the port (equality, `$in`; `$eq`, `$ne`, `$nin` for good measure) on one value. */
function matchesValue(value: unknown, cond: unknown): boolean {
  if (!isOperatorObject(cond)) {
    // Equality; a value that is an array matches when one of its members is equal (query semantics).
    return valuesEqual(value, cond) || (Array.isArray(value) && value.some((v) => valuesEqual(v, cond)));
  }
  return Object.entries(cond).every(([op, arg]) => {
    switch (op) {
      case '$eq':
        return matchesValue(value, arg);
      case '$ne':
        return !matchesValue(value, arg);
      case '$in':
        return Array.isArray(arg) && arg.some((a) => matchesValue(value, a));
      case '$nin':
        return Array.isArray(arg) && !arg.some((a) => matchesValue(value, a));
      default:
        throw new Error(`$pull condition operator ${op} is outside the document-store contract`);
    }
  });
}

/** Whether an array element is removed by `$pull: { field: cond }` (MongoDB semantics). */
export function pullMatches(elem: unknown, cond: unknown): boolean {
  if (isOperatorObject(cond)) return matchesValue(elem, cond);
  if (isPlainObject(cond)) {
    // A document condition is a query on the element's fields, not a whole-element equality.
    if (!isPlainObject(elem)) return false;
    return Object.entries(cond).every(([path, c]) => matchesValue(getPath(elem, path), c));
  }
  return valuesEqual(elem, cond);
}
