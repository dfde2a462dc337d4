import type { DocumentCollection, ReadOptions, StoredDoc } from './document-store';

/** A document of one account, possibly a tombstone (`_deleted`, left for the outbox relay). */
export interface OwnedDoc extends StoredDoc {
  accountId?: string;
  _deleted?: boolean;
}

/** The document when it belongs to the account and is not deleted; null otherwise. */
export function ownedBy<T extends OwnedDoc>(doc: T | null, accountId: string): T | null {
  return doc && doc.accountId === accountId && doc._deleted !== true ? doc : null;
}

/**
 * Looks a document up by its id alone, then checks account and deletion on the result: a lookup by the
 * primary key is one index probe on MongoDB and a filter every FerretDB backend pushes down (SQLite's
 * pushes down nothing else).
 */
export async function findOwned<T extends OwnedDoc>(
  collection: DocumentCollection<T>,
  id: string,
  accountId: string,
  options?: ReadOptions,
): Promise<T | null> {
  return ownedBy(await collection.findOne({ id }, options), accountId);
}
