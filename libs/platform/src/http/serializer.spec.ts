import { z } from 'zod';
import { responseSerializerCompiler, withoutValidatedUnions } from './serializer';

const photo = z.object({ id: z.string(), caption: z.string().nullable() }).meta({ id: 'Photo' });
const full = z.object({ id: z.string(), accountId: z.string(), photo: photo.nullable(), tags: z.array(z.string()) });
const receipt = z.object({ id: z.string(), duplicate: z.boolean() });
const answer = z.object({ result: z.union([full, receipt]), strategy: z.enum(['a', 'b']).nullable() });
const jsonOf = (schema: z.ZodType) =>
  z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
const unions = (value: unknown): number =>
  Array.isArray(value)
    ? value.reduce((n: number, v) => n + unions(v), 0)
    : typeof value === 'object' && value !== null
      ? Object.entries(value).reduce((n, [k, v]) => n + (k === 'anyOf' || k === 'oneOf' ? 1 : 0) + unions(v), 0)
      : 0;

describe('withoutValidatedUnions', () => {
  it('leaves no union for Ajv in nullable objects, nullable enums and two objects told apart by a key', () => {
    const before = jsonOf(answer);
    expect(unions(before)).toBe(3);
    expect(unions(withoutValidatedUnions(before))).toBe(0);
  });

  it('leaves a union it cannot tell apart by one key as it is', () => {
    const json = jsonOf(z.object({ v: z.union([z.object({ a: z.string() }), z.object({ a: z.number() })]) }));
    expect(unions(withoutValidatedUnions(json))).toBe(1);
  });
});

describe('responseSerializerCompiler', () => {
  const serialize = responseSerializerCompiler({ schema: answer });
  const values = [
    { result: { id: 'l1', accountId: 'a1', photo: { id: 'p1', caption: null }, tags: ['x'] }, strategy: 'a' },
    { result: { id: 'l1', accountId: 'a1', photo: null, tags: [] }, strategy: null },
    { result: { id: 'l2', duplicate: true }, strategy: 'b' },
  ];

  it.each(values)('writes each branch of each union as JSON.stringify does (%#)', (value) => {
    expect(JSON.parse(serialize(value))).toEqual(value);
  });

  it('still leaves out what the schema does not declare', () => {
    const text = serialize({ result: { id: 'l2', duplicate: false, secret: 's' }, strategy: null, internal: 1 });
    expect(JSON.parse(text)).toEqual({ result: { id: 'l2', duplicate: false }, strategy: null });
  });
});

describe('withoutValidatedUnions on a definition that refers to itself', () => {
  it('keeps the recursive nullable as a union instead of copying the definition into itself forever', () => {
    const node = {
      type: 'object',
      properties: { id: { type: 'string' }, parent: { anyOf: [{ $ref: '#/definitions/Node' }, { type: 'null' }] } },
      required: ['id', 'parent'],
      additionalProperties: false,
    };
    const json = { $ref: '#/definitions/Node', definitions: { Node: node } };
    expect(unions(withoutValidatedUnions(json))).toBe(1);
  });
});
