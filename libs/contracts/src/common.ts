import { z } from 'zod';

export const isoDateTime = z.iso.datetime({ offset: true });

/** Accepts `a,b` or a repeated parameter (`?x=a&x=b`) and yields a de-duplicated array. */
export function commaList<T extends z.ZodType<string>>(item: T) {
  return z.preprocess((raw) => {
    if (raw === undefined || raw === '') return undefined;
    const parts = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => String(v).split(','));
    return [...new Set(parts.map((p) => p.trim()).filter((p) => p.length > 0))];
  }, z.array(item).min(1).optional());
}

/** A query parameter that must appear at most once. */
export function single<T extends z.ZodType>(inner: T) {
  return z.preprocess((raw) => (Array.isArray(raw) ? raw[raw.length - 1] : raw), inner);
}

export const pageQuery = {
  limit: single(z.coerce.number().int().min(1).max(100).default(20)).describe('Page size, 1..100 (default 20)'),
  cursor: single(z.string().min(1).max(2048).optional()).describe('Opaque cursor from a previous page'),
};

export function page<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    nextCursor: z.string().nullable(),
    total: z.number().int(),
  });
}

/** `?sort=field` or `?sort=-field` over the given fields. */
export function sortParam<const F extends readonly [string, ...string[]]>(fields: F) {
  const values = fields.flatMap((f) => [f, `-${f}`]) as [string, ...string[]];
  return single(z.enum(values).optional()).describe(
    `One of ${fields.map((f) => `\`${f}\``).join(', ')}; prefix with \`-\` for descending`,
  );
}

export const idParams = z.object({ id: z.string().min(1).max(64) });

export const deleted = z.object({ id: z.string(), deleted: z.literal(true) });

/**
 * The JSON merge patch (RFC 7396) form of a strict object schema: every field optional,
 * optional fields may be `null` (clears them), nested objects patch recursively.
 * Required fields may be changed but not cleared. Unknown keys stay refused.
 */
export function mergePatchOf(schema: z.ZodObject): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
    const optional = field instanceof z.ZodOptional || field instanceof z.ZodDefault || field instanceof z.ZodNullable;
    let inner: z.ZodType = field;
    while (inner instanceof z.ZodOptional || inner instanceof z.ZodDefault || inner instanceof z.ZodNullable) {
      inner = (inner as z.ZodOptional<z.ZodType>).unwrap() as z.ZodType;
    }
    const patched = inner instanceof z.ZodObject ? mergePatchOf(inner) : inner;
    shape[key] = (optional ? patched.nullable() : patched).optional();
  }
  return z.strictObject(shape);
}

// A missing required field reads "is required" rather than zod's generic type message.
z.config({
  customError: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined),
});
