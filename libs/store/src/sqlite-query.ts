import type Database from 'better-sqlite3';
import type { Filter, SortSpec } from './document-store';
import { isPlainObject } from './pull-matcher';

/** A double-quoted SQL identifier. */
export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * A `LIMIT` clause with its count written into the SQL. Bound as a parameter, SQLite (3.53 here) reads the count while it
 * plans and marks the statement to be planned again whenever a value is bound to it: every run of a cached statement
 * would be compiled anew (docs/decisions/0139-sqlite-limits-in-the-sql.md).
 */
export function limitSql(count: number): string {
  if (!Number.isSafeInteger(count) || count < -1)
    throw new RangeError(`LIMIT must be an integer of -1 or more, not ${count}`);
  return `LIMIT ${count}`;
}

/**
 * A connection's prepared statements, by SQL text: a query of a new shape is prepared once and reused. Bounded, as
 * filters (documents' and RESO's) come in as many shapes as clients write: past `size`, it starts over.
 */
export class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly size = 500,
  ) {}

  get(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= this.size) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  clear(): void {
    this.statements.clear();
  }
}

const jsonPaths = new Map<string, string>();

/** `nested.city` -> `$.nested.city` (segments quoted when they are not plain names); remembered, as every query asks again. */
export function jsonPath(path: string): string {
  let found = jsonPaths.get(path);
  if (found === undefined) {
    found = translatePath(path);
    if (jsonPaths.size >= 1000) jsonPaths.clear();
    jsonPaths.set(path, found);
  }
  return found;
}

function translatePath(path: string): string {
  return `$${path
    .split('.')
    .map((part) => {
      if (part === '' || part.includes('"')) throw new Error(`unsupported field path ${JSON.stringify(path)}`);
      return /^[A-Za-z_][A-Za-z0-9_]*$/.test(part) ? `.${part}` : `."${part}"`;
    })
    .join('')}`;
}

const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The generated column holding the value at an indexed path, and the one flagging documents where it is an array. */
export const valueColumn = (path: string): string => jsonPath(path);
export const arrayColumn = (path: string): string => `${jsonPath(path)}[]`;
/**
 * The SQL value of a path: json_extract, except that objects and arrays become blobs of their JSON and booleans the
 * blobs x'F000'/x'F001' (json_extract gives text and 1/0). So `true` never equals the number 1, a string never
 * equals or compares with an object, and the sort order is missing/null, numbers, strings, arrays/objects, booleans.
 */
export function valueExpr(path: string): string {
  const at = literal(jsonPath(path));
  return `CASE json_type(doc, ${at}) WHEN 'true' THEN x'F001' WHEN 'false' THEN x'F000' WHEN 'object' THEN CAST(json_extract(doc, ${at}) AS BLOB) WHEN 'array' THEN CAST(json_extract(doc, ${at}) AS BLOB) ELSE json_extract(doc, ${at}) END`;
}

export const arrayColumnExpr = (path: string): string =>
  `CASE json_type(doc, ${literal(jsonPath(path))}) WHEN 'array' THEN 1 END`;

export interface QueryContext {
  /** Paths that have generated columns (declared in an index). */
  columns: ReadonlySet<string>;
  /** Whether some document holds an array at this indexed path (decides whether member matching is needed). */
  holdsArrays(path: string): boolean;
}

type Scalar = string | number | bigint | Buffer | null;

/** `{ $gt: 1, $lt: 5 }` rather than a value to equal. */
export const isOperatorObject = (v: unknown): v is Record<string, unknown> =>
  isPlainObject(v) && Object.keys(v).length > 0 && Object.keys(v).every((k) => k.startsWith('$'));

/** How a value is compared in SQL: JSON numbers and strings are SQL numbers and text, booleans blobs, dates ISO text. */
function bindable(value: unknown): Scalar {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') return value;
  if (typeof value === 'boolean') return Buffer.from([0xf0, value ? 1 : 0]);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

/** The SQL type test a range operand needs: MongoDB compares only within a type (numbers with numbers, strings with strings). */
function rangeType(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint') return "IN ('integer', 'real')";
  if (typeof value === 'string' || value instanceof Date) return "= 'text'";
  throw new Error(`range comparisons take a number, a string or a date, not ${JSON.stringify(value)}`);
}

const RANGE: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** The ways a dotted path can pass through one array on the way: `a.b.c` -> (`a`, `b.c`), (`a.b`, `c`). */
function throughArrays(path: string): Array<{ prefix: string; rest: string }> {
  const parts = path.split('.');
  return parts
    .slice(1)
    .map((_, i) => ({ prefix: parts.slice(0, i + 1).join('.'), rest: parts.slice(i + 1).join('.') }));
}

/**
 * Rows (`value`, `type`) of what `rest` holds in each element of the array at `prefix` (members of it, when
 * it is an array itself), as MongoDB matches `prefix.rest` through an array of sub-documents.
 */
function elementValues(prefix: string, rest: string): string {
  const at = literal(jsonPath(prefix));
  return `(SELECT m.value AS value, m.type AS type FROM json_each(doc, ${at}) AS e, json_each(e.value, ${literal(jsonPath(rest))}) AS m WHERE json_type(doc, ${at}) = 'array' AND e.type = 'object')`;
}

/**
 * Translates the port's filter subset to a SQL condition with bound parameters. An indexed path is read
 * from its generated column (so SQLite uses the index), any other path with json_extract. Equality and
 * ranges also match array members (`EXISTS (... json_each ...)`), on indexed paths only once some
 * document holds an array there. `NOT` is applied to conditions made non-null (a missing field is not equal).
 */
export class SqlFilter {
  readonly params: Scalar[] = [];

  constructor(private readonly ctx: QueryContext) {}

  where(filter: Filter): string {
    const terms = Object.entries(filter).map(([key, value]) => this.term(key, value));
    if (terms.length === 0) return '1';
    return terms.length === 1 ? terms[0] : `(${terms.join(' AND ')})`;
  }

  orderBy(sort: SortSpec): string {
    return Object.entries(sort)
      .map(([path, dir]) => `${this.ref(path)} ${dir === -1 ? 'DESC' : 'ASC'}`)
      .join(', ');
  }

  private term(key: string, value: unknown): string {
    if (key === '$or' || key === '$and') {
      if (!Array.isArray(value) || value.length === 0) throw new Error(`${key} needs a non-empty array`);
      return `(${value.map((f) => this.where(f as Filter)).join(key === '$or' ? ' OR ' : ' AND ')})`;
    }
    if (key.startsWith('$')) throw new Error(`filter operator ${key} is outside the document-store contract`);
    if (!isOperatorObject(value)) return this.eq(key, value);
    const terms = Object.entries(value).map(([op, arg]) => this.operator(key, op, arg));
    return terms.length === 1 ? terms[0] : `(${terms.join(' AND ')})`;
  }

  private operator(path: string, op: string, arg: unknown): string {
    switch (op) {
      case '$eq':
        return this.eq(path, arg);
      case '$ne':
        return this.not(this.eq(path, arg));
      case '$in':
        return this.in(path, arg);
      case '$nin':
        return this.not(this.in(path, arg));
      case '$exists':
        if (path === 'id') return arg ? '1' : '0';
        return arg ? this.exists(path) : this.not(this.exists(path));
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        const type = rangeType(arg);
        const sqlOp = RANGE[op];
        return this.anyOf(
          path,
          (x) => `(${x} ${sqlOp} ${this.param(arg)} AND typeof(${x}) ${type})`,
          () => `value ${sqlOp} ${this.param(arg)} AND type ${type}`,
        );
      }
      default:
        throw new Error(`filter operator ${op} is outside the document-store contract`);
    }
  }

  private eq(path: string, value: unknown): string {
    if (value === null || value === undefined) return `${this.ref(path)} IS NULL`;
    if (typeof value === 'boolean')
      return this.anyOf(
        path,
        (x) => `${x} = ${this.param(value)}`,
        () => `type = ${literal(String(value))}`,
      );
    if (isPlainObject(value) || Array.isArray(value)) {
      const kind = literal(Array.isArray(value) ? 'array' : 'object');
      return this.anyOf(
        path,
        (x) => `${x} = CAST(json(${this.param(value)}) AS BLOB)`,
        () => `type = ${kind} AND value = json(${this.param(value)})`,
      );
    }
    return this.anyOf(
      path,
      (x) => `${x} = ${this.param(value)}`,
      () => `value = ${this.param(value)} AND type NOT IN ('true', 'false')`,
    );
  }

  private in(path: string, values: unknown): string {
    if (!Array.isArray(values)) throw new Error(`$in/$nin of ${path} needs an array`);
    const plain = values.filter((v) => typeof v === 'string' || typeof v === 'number' || v instanceof Date);
    const terms: string[] = [];
    if (plain.length > 0) {
      // Parameters are bound in the order they appear in the SQL text: this term comes first.
      const list = () => plain.map((v) => this.param(v)).join(', ');
      terms.push(
        this.anyOf(
          path,
          (x) => `${x} IN (${list()})`,
          () => `value IN (${list()}) AND type NOT IN ('true', 'false')`,
        ),
      );
    }
    terms.push(...values.filter((v) => !plain.includes(v)).map((v) => this.eq(path, v)));
    if (terms.length === 0) return '0';
    return terms.length === 1 ? terms[0] : `(${terms.join(' OR ')})`;
  }

  /**
   * `scalar` on the value itself, or `member` on one of its members when it is an array, or on the value
   * reached through an array on the way (`items.status` with `items` an array of sub-documents).
   */
  private anyOf(path: string, scalar: (x: string) => string, member: () => string): string {
    const direct = scalar(this.ref(path));
    if (path === 'id') return direct;
    const at = literal(jsonPath(path));
    const through = throughArrays(path).map(
      ({ prefix, rest }) => `EXISTS (SELECT 1 FROM ${elementValues(prefix, rest)} WHERE ${member()})`,
    );
    if (this.ctx.columns.has(path) && !this.ctx.holdsArrays(path))
      return through.length ? `(${[direct, ...through].join(' OR ')})` : direct;
    // Indexed, both sides of the OR are (the array flag has a partial index): SQLite answers it with two index searches.
    const isArray = this.ctx.columns.has(path) ? `${ident(arrayColumn(path))} = 1` : `json_type(doc, ${at}) = 'array'`;
    const members = `(${isArray} AND EXISTS (SELECT 1 FROM json_each(doc, ${at}) WHERE ${member()}))`;
    return `(${[direct, members, ...through].join(' OR ')})`;
  }

  private exists(path: string): string {
    const direct = `json_type(doc, ${literal(jsonPath(path))}) IS NOT NULL`;
    const through = throughArrays(path).map(
      ({ prefix, rest }) => `EXISTS (SELECT 1 FROM ${elementValues(prefix, rest)})`,
    );
    return through.length ? `(${[direct, ...through].join(' OR ')})` : direct;
  }

  private not(condition: string): string {
    return `NOT coalesce(${condition}, 0)`;
  }

  private ref(path: string): string {
    if (path === 'id') return 'id';
    return this.ctx.columns.has(path) ? ident(valueColumn(path)) : valueExpr(path);
  }

  private param(value: unknown): string {
    this.params.push(bindable(value));
    return '?';
  }
}
