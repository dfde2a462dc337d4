import { defaultParser } from '@odata/parser';
import { badRequest } from './errors';
import { ENUM_NAMESPACE, enumMembers, type FieldMapping, type PrimitiveType } from './mapping';

/**
 * `$filter` to a {@link FieldFilter}: the expression parsed by `@odata/parser` (OData v4 ABNF), then checked against
 * the served fields and their types, literals turned into the values the search index holds. The index adapters
 * (SQLite, Elasticsearch) translate a FieldFilter to their own query; nothing here reads data.
 */

/** What the index holds for a field: strings (enums as member names, dates as `YYYY-MM-DD`), numbers (timestamps as epoch ms), booleans. */
export type IndexValue = string | number | boolean | null;
export type Comparison = 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le';

export type FieldFilter =
  | { kind: 'and' | 'or'; of: FieldFilter[] }
  | { kind: 'not'; of: FieldFilter }
  /** `eq null` and `ne null` test absence; other comparisons never match a missing value. */
  | { kind: 'compare'; field: string; op: Comparison; value: IndexValue }
  | { kind: 'in'; field: string; values: IndexValue[] }
  | { kind: 'text'; field: string; fn: 'contains' | 'startswith' | 'endswith'; value: string }
  /** The collection holds at least one of `values` (`has`, `any(x: x eq …)`); none: any element at all. */
  | { kind: 'any'; field: string; values?: string[] }
  /** Every element of the collection is one of `values` (true for an empty collection, as OData's `all`). */
  | { kind: 'all'; field: string; values: string[] }
  /** Keyset position: `(fields) > (values)` (or `<`), every field required and of one direction. */
  | { kind: 'tuple'; fields: string[]; op: 'gt' | 'lt'; values: IndexValue[] }
  | { kind: 'const'; value: boolean };

export const MAX_FILTER_LENGTH = 8_000;
export const MAX_FILTER_DEPTH = 16;
export const MAX_IN_VALUES = 200;

/** A served field as filters see it. */
export type FilterField = Pick<FieldMapping<unknown>, 'name' | 'type' | 'collection'>;

interface Node {
  type: string;
  value: unknown;
  raw?: string;
}

const COMPARISONS: Record<string, Comparison> = {
  EqualsExpression: 'eq',
  NotEqualsExpression: 'ne',
  GreaterThanExpression: 'gt',
  GreaterOrEqualsExpression: 'ge',
  LesserThanExpression: 'lt',
  LesserOrEqualsExpression: 'le',
};
const FLIPPED: Record<Comparison, Comparison> = { eq: 'eq', ne: 'ne', gt: 'lt', ge: 'le', lt: 'gt', le: 'ge' };
const WRAPPERS = new Set(['CommonExpression', 'BoolParenExpression', 'ParenExpression', 'BoolCommonExpression']);
const NUMERIC = new Set([
  'Edm.SByte',
  'Edm.Byte',
  'Edm.Int16',
  'Edm.Int32',
  'Edm.Int64',
  'Edm.Decimal',
  'Edm.Double',
  'Edm.Single',
]);

/**
 * Rewrites `Field in (a, b)` (OData 4.01, which the parser does not know) to `(Field eq a or Field eq b)`, outside
 * string literals, refusing lists longer than {@link MAX_IN_VALUES}.
 */
export function rewriteIn(filter: string): string {
  let out = '';
  let i = 0;
  const inString = () => {
    // copies a quoted literal starting at i, '' being an escaped quote
    let j = i + 1;
    for (;;) {
      if (j >= filter.length) throw badRequest('A string literal is not closed', '$filter');
      if (filter[j] === "'") {
        if (filter[j + 1] === "'") j += 2;
        else break;
      } else j++;
    }
    const literal = filter.slice(i, j + 1);
    i = j + 1;
    return literal;
  };
  while (i < filter.length) {
    if (filter[i] === "'") {
      out += inString();
      continue;
    }
    const match = /^([A-Za-z_][A-Za-z0-9_./]*)\s+in\s*\(/.exec(filter.slice(i));
    const boundary = i === 0 || /[\s(,]/.test(filter[i - 1]);
    if (match && boundary) {
      const field = match[1];
      i += match[0].length;
      const values: string[] = [];
      let current = '';
      for (;;) {
        if (i >= filter.length) throw badRequest('An `in` list is not closed', '$filter');
        const c = filter[i];
        if (c === "'") {
          current += inString();
          continue;
        }
        if (c === '(') throw badRequest('An `in` list holds literals only', '$filter');
        i++;
        if (c === ',' || c === ')') {
          if (current.trim() === '') throw badRequest('An `in` list has an empty item', '$filter');
          values.push(current.trim());
          current = '';
          if (values.length > MAX_IN_VALUES)
            throw badRequest(`An \`in\` list may hold at most ${MAX_IN_VALUES} values`, '$filter');
          if (c === ')') break;
        } else current += c;
      }
      out += `(${values.map((v) => `${field} eq ${v}`).join(' or ')})`;
      continue;
    }
    out += filter[i];
    i++;
  }
  return out;
}

function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let quoted = false;
  for (const c of text) {
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') max = Math.max(max, ++depth);
    else if (!quoted && c === ')') depth--;
  }
  return max;
}

export interface FilterContext {
  fields: ReadonlyMap<string, FilterField>;
  /** `now()`, epoch milliseconds. */
  now: number;
}

export function parseFilter(text: string, context: FilterContext): FieldFilter {
  if (text.length > MAX_FILTER_LENGTH)
    throw badRequest(`$filter may be at most ${MAX_FILTER_LENGTH} characters`, '$filter');
  if (nestingDepth(text) > MAX_FILTER_DEPTH)
    throw badRequest(`$filter nests deeper than ${MAX_FILTER_DEPTH} levels`, '$filter');
  const rewritten = rewriteIn(text);
  let tree: Node;
  try {
    tree = defaultParser.filter(rewritten) as unknown as Node;
  } catch (err) {
    throw badRequest(`$filter is not a valid OData expression: ${(err as Error).message}`, '$filter');
  }
  const result = new Translator(context).bool(tree, 0);
  return mergeIn(result);
}

/** `a eq 1 or a eq 2 or …` (what `in` became) back into one `in`, which both engines answer with one lookup. */
function mergeIn(filter: FieldFilter): FieldFilter {
  if (filter.kind === 'and') return { kind: 'and', of: filter.of.map(mergeIn) };
  if (filter.kind === 'not') return { kind: 'not', of: mergeIn(filter.of) };
  if (filter.kind !== 'or') return filter;
  const parts = filter.of.map(mergeIn);
  const flat = parts.flatMap((p) => (p.kind === 'or' ? p.of : [p]));
  const eqs = flat.flatMap((p) => (p.kind === 'compare' && p.op === 'eq' && p.value !== null ? [p] : []));
  const field = eqs[0]?.field;
  if (field && eqs.length === flat.length && eqs.every((p) => p.field === field))
    return { kind: 'in', field, values: eqs.map((p) => p.value) };
  return { kind: 'or', of: parts };
}

/** The operands of a chain of `and` (or of `or`), in order, through the parentheses around its links. */
function chainOf(node: Node): Node[] {
  const operands: Node[] = [];
  const pending = [node];
  while (pending.length > 0) {
    const next = pending.pop() as Node;
    const inner = unwrapped(next);
    if (inner.type !== node.type) {
      operands.push(next);
      continue;
    }
    const { left, right } = inner.value as { left: Node; right: Node };
    pending.push(right, left);
  }
  return operands;
}

/** The expression under any parentheses around it. */
function unwrapped(node: Node): Node {
  let at = node;
  while (WRAPPERS.has(at.type)) at = at.value as Node;
  return at;
}

type Operand =
  | { kind: 'field'; field: FilterField }
  | { kind: 'variable'; name: string }
  | { kind: 'literal'; node: Node }
  | { kind: 'now' };

class Translator {
  constructor(private readonly context: FilterContext) {}

  bool(node: Node, depth: number, lambda?: { variable: string; field: FilterField }): FieldFilter {
    if (depth > MAX_FILTER_DEPTH * 2)
      throw badRequest(`$filter nests deeper than ${MAX_FILTER_DEPTH} levels`, '$filter');
    if (WRAPPERS.has(node.type)) return this.bool(node.value as Node, depth + 1, lambda);
    switch (node.type) {
      case 'AndExpression':
      case 'OrExpression':
        // A chain of one operator (`a or b or c …`, which is what `in` becomes) is one level, however long.
        return {
          kind: node.type === 'AndExpression' ? 'and' : 'or',
          of: chainOf(node).map((operand) => this.bool(operand, depth + 1, lambda)),
        };
      case 'NotExpression':
        return { kind: 'not', of: this.bool(node.value as Node, depth + 1, lambda) };
      case 'HasExpression':
        return this.has(node);
      case 'MethodCallExpression':
        return this.method(node);
      case 'FirstMemberExpression':
      case 'MemberExpression':
        return this.lambda(node);
      default: {
        const op = COMPARISONS[node.type];
        if (op) return this.compare(node, op, lambda);
        throw badRequest(`$filter: ${describe(node)} is not supported`, '$filter');
      }
    }
  }

  private operand(node: Node): Operand {
    if (WRAPPERS.has(node.type)) return this.operand(node.value as Node);
    if (node.type === 'Literal' || node.type === 'Enum') return { kind: 'literal', node };
    if (node.type === 'MethodCallExpression') {
      const { method } = node.value as { method: string };
      if (method === 'now') return { kind: 'now' };
      throw badRequest(`$filter: the function ${method}() is not supported`, '$filter');
    }
    const path = memberPath(node);
    if (path.variable !== undefined) return { kind: 'variable', name: path.variable };
    if (path.next) throw badRequest(`$filter: the path ${path.name}/… is not supported`, '$filter');
    return { kind: 'field', field: this.field(path.name) };
  }

  private field(name: string): FilterField {
    const field = this.context.fields.get(name);
    if (!field) throw badRequest(`$filter: ${name} is not a field that can be filtered on`, name);
    return field;
  }

  private compare(node: Node, op: Comparison, lambda?: { variable: string; field: FilterField }): FieldFilter {
    const { left, right } = node.value as { left: Node; right: Node };
    let a = this.operand(left);
    let b = this.operand(right);
    if (a.kind !== 'field' && a.kind !== 'variable') {
      [a, b] = [b, a];
      op = FLIPPED[op];
    }
    if (a.kind === 'variable') {
      if (!lambda || a.name !== lambda.variable)
        throw badRequest(`$filter: ${a.name} is not a lambda variable here`, '$filter');
      if (op !== 'eq')
        throw badRequest('$filter: inside any/all only `eq` comparisons joined by `or` are supported', '$filter');
      const value = this.value(b, { ...lambda.field, collection: false });
      return { kind: 'any', field: lambda.field.name, values: [String(value)] };
    }
    if (a.kind !== 'field') throw badRequest('$filter: a comparison needs a field on one side', '$filter');
    const field = a.field;
    if (field.collection) throw badRequest(`$filter: ${field.name} is a collection: use has, any or all`, field.name);
    if (typeof field.type !== 'string' && !['eq', 'ne'].includes(op))
      throw badRequest(`$filter: ${field.name} is an enumeration: only eq, ne, has and in compare it`, field.name);
    const value = this.value(b, field);
    if (value === null && op !== 'eq' && op !== 'ne') return { kind: 'const', value: false };
    return { kind: 'compare', field: field.name, op, value };
  }

  /** A literal (or now()) as the index holds values of `field`'s type. */
  private value(operand: Operand, field: FilterField): IndexValue {
    if (operand.kind === 'now') {
      if (field.type !== 'Edm.DateTimeOffset')
        throw badRequest(`$filter: now() compares with timestamps, not ${field.name}`, field.name);
      return this.context.now;
    }
    if (operand.kind !== 'literal') throw badRequest('$filter: compare a field with a literal', '$filter');
    const node = operand.node;
    if (node.type === 'Enum') return this.enumLiteral(node, field);
    const literalType = node.value as string;
    const raw = node.raw ?? '';
    if (literalType === 'null') return null;
    const type = field.type;
    const mismatch = () =>
      badRequest(
        `$filter: ${raw} is not a value of ${field.name} (${typeof type === 'string' ? type : `${ENUM_NAMESPACE}.${type.enum}`})`,
        field.name,
      );
    if (typeof type !== 'string') {
      if (literalType !== 'Edm.String') throw mismatch();
      return this.member(type.enum, unquote(raw), field);
    }
    switch (type as PrimitiveType) {
      case 'Edm.String':
        if (literalType !== 'Edm.String') throw mismatch();
        return unquote(raw);
      case 'Edm.Int64':
      case 'Edm.Decimal': {
        if (!NUMERIC.has(literalType)) throw mismatch();
        const n = Number(raw);
        if (!Number.isFinite(n)) throw mismatch();
        return n;
      }
      case 'Edm.Boolean':
        if (literalType !== 'Edm.Boolean') throw mismatch();
        return raw.toLowerCase() === 'true';
      case 'Edm.Date':
        if (literalType !== 'Edm.Date') throw mismatch();
        return raw;
      case 'Edm.DateTimeOffset': {
        if (literalType !== 'Edm.DateTimeOffset' && literalType !== 'Edm.Date') throw mismatch();
        const ms = Date.parse(literalType === 'Edm.Date' ? `${raw}T00:00:00Z` : raw);
        if (!Number.isFinite(ms)) throw mismatch();
        return ms;
      }
    }
  }

  private enumLiteral(node: Node, field: FilterField): string {
    const members = this.enumLiteralMembers(node, field);
    if (members.length !== 1) throw badRequest('$filter: give one enumeration member per literal', field.name);
    return members[0];
  }

  /** The members of `Namespace.Enum'A,B'`, checked against the field's enumeration. */
  private enumLiteralMembers(node: Node, field: FilterField): string[] {
    const { name, value } = node.value as { name: Node; value: Node };
    const qualified = name.raw ?? '';
    if (typeof field.type === 'string')
      throw badRequest(`$filter: ${field.name} is not an enumeration; ${qualified} does not apply`, field.name);
    const expected = `${ENUM_NAMESPACE}.${field.type.enum}`;
    if (qualified !== expected)
      throw badRequest(`$filter: ${field.name} takes ${expected} values, not ${qualified}`, field.name);
    const enumName = field.type.enum;
    return (value.value as { values: Node[] }).values.map((m) =>
      this.member(enumName, (m.value as { name?: string }).name ?? m.raw ?? '', field),
    );
  }

  private member(enumName: string, member: string, field: FilterField): string {
    if (!enumMembers(enumName).some(([m]) => m === member))
      throw badRequest(`$filter: ${member} is not a member of ${ENUM_NAMESPACE}.${enumName}`, field.name);
    return member;
  }

  private has(node: Node): FieldFilter {
    const { left, right } = node.value as { left: Node; right: Node };
    const a = this.operand(left);
    if (a.kind !== 'field' || typeof a.field.type === 'string')
      throw badRequest('$filter: has takes an enumeration field on its left', '$filter');
    const b = this.operand(right);
    if (b.kind !== 'literal') throw badRequest('$filter: has takes an enumeration literal on its right', '$filter');
    let members: string[];
    if (b.node.type === 'Enum') {
      members = this.enumLiteralMembers(b.node, a.field);
    } else if (b.node.value === 'Edm.String') {
      members = unquote(b.node.raw ?? '')
        .split(',')
        .map((m) => this.member((a.field.type as { enum: string }).enum, m.trim(), a.field));
    } else throw badRequest('$filter: has takes an enumeration literal on its right', '$filter');
    const field = a.field.name;
    const one = (m: string): FieldFilter =>
      a.field.collection ? { kind: 'any', field, values: [m] } : { kind: 'compare', field, op: 'eq', value: m };
    return members.length === 1 ? one(members[0]) : { kind: 'and', of: members.map(one) };
  }

  private method(node: Node): FieldFilter {
    const { method, parameters } = node.value as { method: string; parameters?: Node[] };
    if (method !== 'contains' && method !== 'startswith' && method !== 'endswith')
      throw badRequest(`$filter: the function ${method}() is not supported`, '$filter');
    const [target, literal] = (parameters ?? []).map((p) => this.operand(p));
    if (target?.kind !== 'field' || target.field.type !== 'Edm.String' || target.field.collection)
      throw badRequest(`$filter: ${method}() takes a string field first`, '$filter');
    if (literal?.kind !== 'literal' || literal.node.value !== 'Edm.String')
      throw badRequest(`$filter: ${method}() takes a string literal second`, '$filter');
    return { kind: 'text', field: target.field.name, fn: method, value: unquote(literal.node.raw ?? '') };
  }

  /** `Field/any(x: x eq …)`, `Field/all(x: …)`, `Field/any()`. */
  private lambda(node: Node): FieldFilter {
    const path = memberPath(node);
    if (!path.next) {
      // A bare boolean field.
      const field = path.variable === undefined ? this.field(path.name) : undefined;
      if (field?.type === 'Edm.Boolean' && !field.collection)
        return { kind: 'compare', field: field.name, op: 'eq', value: true };
      throw badRequest(`$filter: ${path.name} is not a boolean expression`, path.name);
    }
    const field = this.field(path.name);
    if (!field.collection) throw badRequest(`$filter: ${field.name} is not a collection`, field.name);
    const step = unwrapPath(path.next);
    if (step.type !== 'AnyExpression' && step.type !== 'AllExpression')
      throw badRequest(`$filter: only any and all follow a collection`, field.name);
    const body = step.value as { variable?: Node; predicate?: Node } | undefined;
    if (!body?.variable || !body.predicate) {
      if (step.type === 'AllExpression') throw badRequest('$filter: all() needs a predicate', field.name);
      return { kind: 'any', field: field.name };
    }
    const variable = (body.variable.value as { name: string }).name;
    const predicate = this.bool(body.predicate.value as Node, 1, { variable, field });
    const values = anyValues(predicate);
    if (!values)
      throw badRequest('$filter: inside any/all only `eq` comparisons joined by `or` are supported', field.name);
    return step.type === 'AnyExpression'
      ? { kind: 'any', field: field.name, values }
      : { kind: 'all', field: field.name, values };
  }
}

/** The values of a lambda predicate made of `x eq v` joined by `or`; undefined for anything else. */
function anyValues(filter: FieldFilter): string[] | undefined {
  if (filter.kind === 'any') return filter.values;
  if (filter.kind !== 'or') return undefined;
  const out: string[] = [];
  for (const part of filter.of) {
    const values = anyValues(part);
    if (!values) return undefined;
    out.push(...values);
  }
  return out;
}

function unquote(raw: string): string {
  return raw.slice(1, -1).replace(/''/g, "'");
}

function describe(node: Node): string {
  return node.raw ? `\`${node.raw}\`` : node.type;
}

function unwrapPath(node: Node): Node {
  let current = node;
  while (current && (current.type === 'CollectionPathExpression' || WRAPPERS.has(current.type)) && current.value)
    current = current.value as Node;
  return current;
}

/** The name at the start of a member expression, the lambda variable it names, and what follows a `/`. */
function memberPath(node: Node): { name: string; variable?: string; next?: Node } {
  let current: Node = node;
  while (current.type === 'FirstMemberExpression' || current.type === 'MemberExpression' || WRAPPERS.has(current.type))
    current = current.value as Node;
  if (current.type === 'LambdaVariableExpression') {
    const name = (current.value as { name: string }).name;
    return { name, variable: name };
  }
  if (current.type !== 'PropertyPathExpression')
    throw badRequest(`$filter: ${describe(current)} is not supported`, '$filter');
  const value = current.value as Node & { current?: Node; next?: Node };
  if (value.type === 'ODataIdentifier') return { name: (value.value as { name: string }).name };
  if (value.current) {
    const name = (value.current.value as { name: string }).name;
    return { name, next: typeof value.next === 'object' ? value.next : undefined };
  }
  throw badRequest(`$filter: ${describe(current)} is not supported`, '$filter');
}
