import { API_TAGS } from './openapi';

/** An OpenAPI document as the services serve theirs: only the parts that merging touches are typed. */
export interface OpenApiDoc {
  paths?: Record<string, unknown>;
  components?: { schemas?: Record<string, unknown>; [k: string]: unknown };
  tags?: unknown[];
  [k: string]: unknown;
}

/** Folds other documents' paths and component schemas into `own` (first definition wins). */
export function mergeOpenApi(own: OpenApiDoc, others: OpenApiDoc[]): OpenApiDoc {
  const out: OpenApiDoc = {
    ...own,
    paths: { ...own.paths },
    components: { ...own.components, schemas: { ...own.components?.schemas } },
  };
  const tags = new Set((own.tags ?? []).map((t) => (t as { name: string }).name));
  for (const doc of others) {
    for (const [path, item] of Object.entries(doc.paths ?? {})) out.paths![path] ??= item;
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {}))
      out.components!.schemas![name] ??= schema;
    for (const t of doc.tags ?? []) tags.add((t as { name: string }).name);
  }
  out.tags = API_TAGS.filter((t) => tags.has(t.name));
  return out;
}
