import {
  INDEXED_PROPERTY_FIELDS,
  type FieldFilter,
  type IndexedField,
  type IndexValue,
  type OrderKey,
} from '@estate/reso';

/**
 * The RESO field query (see {@link FieldQuery}) evaluated in process: the in-memory index answers with it, and it
 * states the semantics the SQLite and Elasticsearch translations keep: a comparison with a missing value is false
 * (so `not` of it is true), `ne` matches a missing value, missing values sort last in either direction.
 */

export type FieldRecord = Record<string, IndexValue | string[]>;

export const INDEXED_FIELDS: ReadonlyMap<string, IndexedField> = new Map(
  INDEXED_PROPERTY_FIELDS.map((f) => [f.name, f]),
);

export function indexedField(name: string): IndexedField {
  const field = INDEXED_FIELDS.get(name);
  if (!field) throw new Error(`${name} is not an indexed RESO field`);
  return field;
}

const compareValues = (a: IndexValue, b: IndexValue): number => {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
};

export function matches(filter: FieldFilter, record: FieldRecord): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.of.every((f) => matches(f, record));
    case 'or':
      return filter.of.some((f) => matches(f, record));
    case 'not':
      return !matches(filter.of, record);
    case 'const':
      return filter.value;
    case 'compare': {
      const v = record[filter.field] as IndexValue;
      if (filter.value === null) return filter.op === 'eq' ? v === null : filter.op === 'ne' ? v !== null : false;
      if (v === null || v === undefined) return filter.op === 'ne';
      const c = compareValues(v, filter.value);
      switch (filter.op) {
        case 'eq':
          return c === 0;
        case 'ne':
          return c !== 0;
        case 'gt':
          return c > 0;
        case 'ge':
          return c >= 0;
        case 'lt':
          return c < 0;
        case 'le':
          return c <= 0;
      }
      return false;
    }
    case 'in': {
      const v = record[filter.field] as IndexValue;
      return v !== null && filter.values.includes(v);
    }
    case 'text': {
      const v = record[filter.field];
      if (typeof v !== 'string') return false;
      return filter.fn === 'contains'
        ? v.includes(filter.value)
        : filter.fn === 'startswith'
          ? v.startsWith(filter.value)
          : v.endsWith(filter.value);
    }
    case 'any': {
      const list = (record[filter.field] as string[] | null) ?? [];
      const values = filter.values;
      return values ? list.some((x) => values.includes(x)) : list.length > 0;
    }
    case 'all': {
      const list = (record[filter.field] as string[] | null) ?? [];
      return list.every((x) => filter.values.includes(x));
    }
    case 'tuple': {
      for (let i = 0; i < filter.fields.length; i++) {
        const c = compareValues(record[filter.fields[i]] as IndexValue, filter.values[i]);
        if (c !== 0) return filter.op === 'gt' ? c > 0 : c < 0;
      }
      return false;
    }
  }
}

/** Orders records as the engines do: by each key, a missing value last in either direction. */
export function compareRecords(order: readonly OrderKey[], a: FieldRecord, b: FieldRecord): number {
  for (const { field, direction } of order) {
    const x = a[field] as IndexValue;
    const y = b[field] as IndexValue;
    if (x === y) continue;
    if (x === null) return 1;
    if (y === null) return -1;
    const c = compareValues(x, y);
    return direction === 'asc' ? c : -c;
  }
  return 0;
}

/** The distinct values of a collection field. */
export const distinct = (values: readonly string[]): string[] => [...new Set(values)];
