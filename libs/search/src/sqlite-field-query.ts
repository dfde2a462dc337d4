import type { FieldFilter, IndexValue, OrderKey } from '@estate/reso';
import { INDEXED_FIELDS, distinct, indexedField, type FieldRecord } from './field-query';

/**
 * The SQLite index's RESO tables and the SQL of a field query (see field-query.ts for the semantics): a row per
 * listing in `search_reso` with a column per indexed scalar field (the same rowid as `search_listings`), and the
 * values of collection fields in `search_reso_values`. Pure: no database here.
 */

const SCALARS = [...INDEXED_FIELDS.values()].filter((f) => !f.collection);
const COLLECTIONS = [...INDEXED_FIELDS.values()].filter((f) => f.collection);
/**
 * Fields a query filters or sorts on most: each has an index that starts with the account (others are tested on the
 * rows these, or the account's key order, lead to). Every index costs each listing write: six keep it under twice.
 */
const INDEXED_COLUMNS = ['ListingKey', 'ModificationTimestamp', 'ListPrice', 'StandardStatus', 'City', 'BedroomsTotal'];

const column = (name: string): string => {
  indexedField(name);
  return `r."${name}"`;
};

const sqlType = (kind: string): string =>
  kind === 'number' || kind === 'timestamp' || kind === 'boolean' ? 'REAL' : 'TEXT';

export const RESO_SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_reso (id INTEGER PRIMARY KEY, account_id TEXT NOT NULL,
    ${SCALARS.map((f) => `"${f.name}" ${sqlType(f.kind)}`).join(', ')});
  ${INDEXED_COLUMNS.map(
    (name) =>
      `CREATE INDEX IF NOT EXISTS search_reso_${name.toLowerCase()} ON search_reso (account_id, "${name}"${name === 'ListingKey' ? '' : ', "ListingKey"'});`,
  ).join('\n  ')}
  CREATE TABLE IF NOT EXISTS search_reso_values (field TEXT NOT NULL, value TEXT NOT NULL, id INTEGER NOT NULL,
    PRIMARY KEY (field, value, id)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS search_reso_values_id ON search_reso_values (id);
`;

/** Columns a `search_reso` made by an earlier version lacks (a field indexed since), as `ALTER TABLE` statements. */
export function resoColumnsToAdd(existing: readonly string[]): string[] {
  const have = new Set(existing);
  return SCALARS.filter((f) => !have.has(f.name)).map(
    (f) => `ALTER TABLE search_reso ADD COLUMN "${f.name}" ${sqlType(f.kind)}`,
  );
}

const stored = (value: IndexValue): unknown => (typeof value === 'boolean' ? (value ? 1 : 0) : value);

/** The statements that write one listing's RESO row and values (after deleting the old ones), made once. */
export const RESO_ROW_STATEMENTS = (() => {
  const names = SCALARS.map((f) => `"${f.name}"`);
  return {
    // An upsert, not INSERT OR REPLACE: an update then touches only the indexes of the columns that changed.
    row: `INSERT INTO search_reso (id, account_id, ${names.join(', ')}) VALUES (?, ?, ${names.map(() => '?').join(', ')})
      ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id, ${names.map((n) => `${n} = excluded.${n}`).join(', ')}`,
    value: 'INSERT OR IGNORE INTO search_reso_values (field, value, id) VALUES (?, ?, ?)',
    clearValues: 'DELETE FROM search_reso_values WHERE id = ?',
    clearRow: 'DELETE FROM search_reso WHERE id = ?',
  } as const;
})();

export function resoRowParams(id: number, accountId: string, record: FieldRecord): unknown[] {
  return [id, accountId, ...SCALARS.map((f) => stored(record[f.name] as IndexValue))];
}

export function resoValueParams(id: number, record: FieldRecord): unknown[][] {
  return COLLECTIONS.flatMap((f) => distinct((record[f.name] as string[]) ?? []).map((v) => [f.name, v, id]));
}

class Sql {
  readonly params: unknown[] = [];
  bind(value: IndexValue): string {
    this.params.push(stored(value));
    return '?';
  }
}

function render(filter: FieldFilter, sql: Sql): string {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.of.map((f) => render(f, sql)).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      // A comparison with a missing value is NULL in SQL and false in OData: not(false) is true.
      return `NOT coalesce(${render(filter.of, sql)}, 0)`;
    case 'const':
      return filter.value ? '1' : '0';
    case 'compare': {
      const col = column(filter.field);
      if (filter.value === null)
        return filter.op === 'eq' ? `${col} IS NULL` : filter.op === 'ne' ? `${col} IS NOT NULL` : '0';
      if (filter.op === 'ne') return `${col} IS NOT ${sql.bind(filter.value)}`;
      const op = { eq: '=', gt: '>', ge: '>=', lt: '<', le: '<=' }[filter.op];
      return `${col} ${op} ${sql.bind(filter.value)}`;
    }
    case 'in':
      return `${column(filter.field)} IN (${filter.values.map((v) => sql.bind(v)).join(', ')})`;
    case 'text': {
      const col = column(filter.field);
      if (filter.value === '') return `${col} IS NOT NULL`;
      if (filter.fn === 'contains') return `instr(${col}, ${sql.bind(filter.value)}) > 0`;
      const length = [...filter.value].length;
      return filter.fn === 'startswith'
        ? `substr(${col}, 1, ${length}) = ${sql.bind(filter.value)}`
        : `substr(${col}, -${length}) = ${sql.bind(filter.value)}`;
    }
    case 'any': {
      indexedField(filter.field);
      const field = sql.bind(filter.field);
      if (!filter.values) return `r.id IN (SELECT id FROM search_reso_values WHERE field = ${field})`;
      return `r.id IN (SELECT id FROM search_reso_values WHERE field = ${field} AND value IN (${filter.values.map((v) => sql.bind(v)).join(', ')}))`;
    }
    case 'all': {
      indexedField(filter.field);
      const field = sql.bind(filter.field);
      return `NOT EXISTS (SELECT 1 FROM search_reso_values v WHERE v.id = r.id AND v.field = ${field} AND v.value NOT IN (${filter.values.map((v) => sql.bind(v)).join(', ')}))`;
    }
    case 'tuple':
      // Row values: one index range when the order's columns lead an index.
      return `(${filter.fields.map(column).join(', ')}) ${filter.op === 'gt' ? '>' : '<'} (${filter.values.map((v) => sql.bind(v)).join(', ')})`;
  }
}

/** WHERE (with the account) and ORDER BY of a field query over `search_reso r`. */
export function fieldQuerySql(
  accountId: string,
  where: FieldFilter | undefined,
  order: readonly OrderKey[],
): { where: string; params: unknown[]; orderBy: string } {
  const sql = new Sql();
  sql.params.push(accountId);
  const condition = where ? ` AND ${render(where, sql)}` : '';
  const orderBy = order
    .map(({ field, direction }) => {
      const f = indexedField(field);
      // Missing values last either way; a required field has none, and its order can come from an index.
      return `${column(field)} ${direction.toUpperCase()}${f.required ? '' : ' NULLS LAST'}`;
    })
    .join(', ');
  return { where: `r.account_id = ?${condition}`, params: sql.params, orderBy };
}
