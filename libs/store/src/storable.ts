import type { Update } from './document-store';

/** Drops null and undefined fields: optional fields are absent in storage, so every engine sorts and matches them alike. */
export function storable<T extends object>(doc: T): T {
  return Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null && v !== undefined)) as T;
}

/** `$set` of the given fields, `$unset` of the optional ones that are now absent. */
export function replaceFields(
  next: Record<string, unknown>,
  fields: readonly string[],
): Required<Pick<Update, '$set'>> & Pick<Update, '$unset'> {
  const $set: Record<string, unknown> = {};
  const $unset: Record<string, true> = {};
  for (const field of fields) {
    if (next[field] === undefined || next[field] === null) $unset[field] = true;
    else $set[field] = next[field];
  }
  return Object.keys($unset).length > 0 ? { $set, $unset } : { $set };
}
