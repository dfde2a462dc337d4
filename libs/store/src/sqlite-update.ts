import type { Update } from './document-store';
import { isPlainObject, pullMatches } from './pull-matcher';

type Raw = Record<string, unknown>;
type Container = Raw | unknown[];

const isContainer = (v: unknown): v is Container => isPlainObject(v) || Array.isArray(v);

function child(parent: Container, key: string): unknown {
  if (Array.isArray(parent)) return /^\d+$/.test(key) ? parent[Number(key)] : undefined;
  return parent[key];
}

function assign(parent: Container, key: string, value: unknown, path: string): void {
  if (Array.isArray(parent)) {
    if (!/^\d+$/.test(key)) throw new Error(`cannot set ${path}: ${key} is not an index of an array`);
    parent[Number(key)] = value;
  } else {
    parent[key] = value;
  }
}

/** The container holding the last segment of `path`; intermediate objects are made when `create` (as `$set` does). */
function parentOf(doc: Raw, path: string, create: boolean): { parent: Container; key: string } | undefined {
  const parts = path.split('.');
  const key = parts.pop() as string;
  let cur: Container = doc;
  for (const part of parts) {
    let next = child(cur, part);
    if (next === undefined || next === null) {
      if (!create) return undefined;
      next = {};
      assign(cur, part, next, path);
    }
    if (!isContainer(next)) {
      if (!create) return undefined;
      throw new Error(`cannot set ${path}: ${part} holds a ${typeof next}`);
    }
    cur = next;
  }
  return { parent: cur, key };
}

function fieldsOf(op: Raw | undefined): [string, unknown][] {
  if (!op) return [];
  const entries = Object.entries(op);
  for (const [path] of entries)
    if (path === 'id' || path.startsWith('id.')) throw new Error('the id of a document cannot be updated');
  return entries;
}

/**
 * Applies the port's update operators to a parsed document, in place (MongoDB semantics for the subset:
 * `$set` makes missing intermediate objects, `$inc`/`$push` start from nothing, `$pull` leaves a non-array alone).
 */
export function applyUpdate(doc: Raw, update: Update): void {
  for (const [path, value] of fieldsOf(update.$set)) {
    const { parent, key } = parentOf(doc, path, true)!;
    assign(parent, key, value, path);
  }
  for (const [path] of fieldsOf(update.$unset)) {
    const at = parentOf(doc, path, false);
    if (!at) continue;
    if (Array.isArray(at.parent)) {
      // MongoDB leaves a null in place of an unset array element.
      if (/^\d+$/.test(at.key) && Number(at.key) < at.parent.length) at.parent[Number(at.key)] = null;
    } else {
      delete at.parent[at.key];
    }
  }
  for (const [path, by] of fieldsOf(update.$inc)) {
    if (typeof by !== 'number') throw new Error(`$inc of ${path} needs a number`);
    const { parent, key } = parentOf(doc, path, true)!;
    const current = child(parent, key);
    if (current !== undefined && typeof current !== 'number')
      throw new Error(`cannot $inc ${path}: it holds a ${typeof current}`);
    assign(parent, key, (current ?? 0) + by, path);
  }
  for (const [path, value] of fieldsOf(update.$push)) {
    const { parent, key } = parentOf(doc, path, true)!;
    const current = child(parent, key);
    // `{ $each: [...] }` appends every element, as MongoDB does.
    const values = isPlainObject(value) && Array.isArray(value.$each) ? (value.$each as unknown[]) : [value];
    if (current === undefined) assign(parent, key, [...values], path);
    else if (Array.isArray(current)) current.push(...values);
    else throw new Error(`cannot $push to ${path}: it is not an array`);
  }
  for (const [path, cond] of fieldsOf(update.$pull)) {
    const at = parentOf(doc, path, false);
    const current = at && child(at.parent, at.key);
    if (at && Array.isArray(current))
      assign(
        at.parent,
        at.key,
        current.filter((e) => !pullMatches(e, cond)),
        path,
      );
  }
}
