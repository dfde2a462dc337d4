import fastJson from 'fast-json-stringify';
import { z } from 'zod';

type Serialize = (data: unknown) => string;
type JsonSchema = Record<string, unknown>;
const compiled = new WeakMap<object, Serialize>();

/**
 * Response serializer: the route's zod response schema, turned into JSON Schema once and
 * compiled by fast-json-stringify (Fastify's own serializer). Only declared fields leave the
 * service, and a missing required field fails loudly instead of shipping a broken answer.
 */
export function responseSerializerCompiler({ schema }: { schema: unknown }): Serialize {
  if (!(schema instanceof z.ZodType)) return (data) => JSON.stringify(data);
  let serialize = compiled.get(schema);
  if (!serialize) {
    const json = z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' });
    const rewritten: unknown = withoutValidatedUnions(json as JsonSchema);
    serialize = fastJson(rewritten as Parameters<typeof fastJson>[0]) as Serialize;
    compiled.set(schema, serialize);
  }
  return serialize;
}

const isObject = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * fast-json-stringify picks a branch of an `anyOf` by validating the value against each branch with Ajv: it compiles
 * a validator for a branch the first time one is needed (up to hundreds of milliseconds for a listing or a lead, in
 * the middle of that request) and validates the value on every answer. The two unions zod writes into our answers
 * are rewritten so that no branch needs validating:
 *
 * - a nullable value (`x.nullable()`, `anyOf: [x, { type: 'null' }]`) becomes `x` with `null` added to its type,
 *   which fast-json-stringify tells apart by `typeof`;
 * - a union of two objects of which one has a required key the other cannot hold (it declares no such property and
 *   allows no other) becomes `if: { required: [key] }, then: one, else: the other`: Ajv then checks one key.
 *
 * A `$ref` branch is copied in place from `definitions`. Other unions are left as they are.
 */
export function withoutValidatedUnions(root: JsonSchema): JsonSchema {
  const definitions = isObject(root.definitions) ? root.definitions : {};
  /** Each definition rewritten once; null while it is being rewritten (one that refers to itself stays a `$ref`). */
  const rewritten = new Map<string, JsonSchema | null>();
  const resolve = (schema: unknown): JsonSchema | undefined => {
    if (!isObject(schema)) return undefined;
    const ref = schema.$ref;
    if (typeof ref !== 'string') return schema;
    const match = /^#\/definitions\/([^/]+)$/.exec(ref)?.[1];
    if (match === undefined) return undefined;
    const name = decodeURIComponent(match);
    if (!rewritten.has(name)) {
      const target = definitions[name];
      if (!isObject(target) || typeof target.$ref === 'string') return undefined;
      rewritten.set(name, null);
      rewritten.set(name, rewrite(target));
    }
    return rewritten.get(name) ?? undefined;
  };
  /** One type, no union of its own: a schema fast-json-stringify serializes without Ajv. */
  const plain = (schema: JsonSchema | undefined): schema is JsonSchema & { type: string } =>
    schema !== undefined &&
    typeof schema.type === 'string' &&
    schema.type !== 'null' &&
    !('anyOf' in schema || 'oneOf' in schema || 'allOf' in schema || 'if' in schema);
  const names = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  /** A key `one` requires that a value of `other` cannot have. */
  const keyOnlyIn = (one: JsonSchema, other: JsonSchema): string | undefined => {
    if (other.additionalProperties !== false) return undefined;
    const declared = isObject(other.properties) ? other.properties : {};
    return names(one.required).find((key) => !(key in declared));
  };
  function rewrite(value: JsonSchema): JsonSchema {
    const out: JsonSchema = {};
    for (const [key, child] of Object.entries(value)) out[key] = rewriteAny(child);
    const options = out.anyOf;
    if (!Array.isArray(options) || options.length !== 2) return out;
    const { anyOf: _anyOf, ...siblings } = out;
    const [a, b] = options.map(resolve);
    const nullAt = options.findIndex((o) => isObject(o) && o.type === 'null' && Object.keys(o).length === 1);
    if (nullAt !== -1) {
      const other = nullAt === 0 ? b : a;
      return plain(other) ? { ...other, ...siblings, type: [other.type, 'null'] } : out;
    }
    if (!plain(a) || !plain(b) || a.type !== 'object' || b.type !== 'object') return out;
    const keyOfA = keyOnlyIn(a, b);
    if (keyOfA !== undefined) return { ...siblings, if: { type: 'object', required: [keyOfA] }, then: a, else: b };
    const keyOfB = keyOnlyIn(b, a);
    if (keyOfB !== undefined) return { ...siblings, if: { type: 'object', required: [keyOfB] }, then: b, else: a };
    return out;
  }
  function rewriteAny(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(rewriteAny);
    return isObject(value) ? rewrite(value) : value;
  }
  return rewrite(root);
}
