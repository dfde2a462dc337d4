import fastJson from 'fast-json-stringify';
import { z } from 'zod';

type Serialize = (data: unknown) => string;
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
    serialize = fastJson(json as Parameters<typeof fastJson>[0]) as Serialize;
    compiled.set(schema, serialize);
  }
  return serialize;
}
