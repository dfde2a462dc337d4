import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '@estate/platform/logging';
import type { DocumentStore, StoredDoc } from '@estate/store';
import { DuplicateKeyError } from '@estate/store';

/** Where the files of the previous (NeDB) version are kept once imported. */
export const NEDB_BACKUP_DIR = 'nedb-backup';
const IMPORT_MARKER_COLLECTION = '_imports';

/** NeDB wrote dates as `{ "$$date": ms }`; the services store ISO strings. */
function revive(_key: string, value: unknown): unknown {
  if (
    value &&
    typeof value === 'object' &&
    '$$date' in value &&
    typeof (value as { $$date: unknown }).$$date === 'number'
  ) {
    return new Date((value as { $$date: number }).$$date).toISOString();
  }
  return value;
}

/**
 * The documents of one NeDB datafile: an append-only log of whole documents, where a later line
 * replaces an earlier one with the same `_id`, `$$deleted` removes it and `$$indexCreated` /
 * `$$indexRemoved` lines describe indexes. A torn last line (a crash mid-append) is skipped.
 */
export function readNedbFile(path: string): StoredDoc[] {
  const docs = new Map<string, Record<string, unknown>>();
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, n) => {
    if (!line.trim()) return;
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(line, revive) as Record<string, unknown>;
    } catch (err) {
      if (n >= lines.length - 2) return;
      throw new Error(`${path}: line ${n + 1} is not a NeDB document`, { cause: err });
    }
    if ('$$indexCreated' in doc || '$$indexRemoved' in doc) return;
    const id = String(doc._id);
    if (doc.$$deleted === true) docs.delete(id);
    else docs.set(id, doc);
  });
  return [...docs.values()].map(({ _id, ...rest }) => ({ ...rest, id: String(_id) }));
}

/** NeDB datafiles of a service folder (`<collection>.db`), if the folder holds any. */
export function nedbFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.db') && !f.startsWith('.'));
}

/**
 * Imports a service folder written by the NeDB version into its new store, once: the documents
 * of each `<collection>.db` go into the collection of the same name (already opened by the
 * service with its indexes), then the files move to `nedb-backup/`. A marker in the store makes a
 * repeated run (after a crash between the import and the move) skip what is already there.
 */
export async function importNedbFolder(dir: string, store: DocumentStore, log: Logger): Promise<number> {
  const files = nedbFilesIn(dir);
  if (files.length === 0) return 0;
  const markers = await store.collection<StoredDoc & { at: string }>(IMPORT_MARKER_COLLECTION);
  let imported = 0;
  for (const file of files) {
    const name = file.slice(0, -'.db'.length);
    if (!(await markers.findOne({ id: `nedb:${name}` }))) {
      const collection = await store.collection<StoredDoc>(name);
      for (const doc of readNedbFile(join(dir, file))) {
        try {
          await collection.insertOne(doc);
          imported++;
        } catch (err) {
          // Already imported by a run that stopped before its marker.
          if (!(err instanceof DuplicateKeyError)) throw err;
        }
      }
      await markers.insertOne({ id: `nedb:${name}`, at: new Date().toISOString() });
    }
    mkdirSync(join(dir, NEDB_BACKUP_DIR), { recursive: true });
    renameSync(join(dir, file), join(dir, NEDB_BACKUP_DIR, file));
  }
  log.info(
    { dir, documents: imported, backup: join(dir, NEDB_BACKUP_DIR) },
    'imported the data of the previous version',
  );
  return imported;
}
