/**
 * The document-store port. One query shape (a MongoDB-style subset) serves every adapter:
 * SQLite in the embedded profile, MongoDB through mongoose in the distributed one.
 *
 * Supported filter operators: equality (also on dotted paths and array members), `$in`, `$nin`,
 * `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$exists`, `$or`, `$and`. Update operators: `$set`,
 * `$unset`, `$inc`, `$push` (one element, or several with `$each`), `$pull` (with an equality or `$in` condition). Anything else is
 * outside the contract and must not be used by services.
 */
export type Filter = Record<string, unknown>;

export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, true | '' | 1>;
  $inc?: Record<string, number>;
  $push?: Record<string, unknown>;
  $pull?: Record<string, unknown>;
}

export type SortSpec = Record<string, 1 | -1>;

export interface ReadOptions {
  /**
   * Top-level fields left out of the documents read (a large field the caller does not need, such as an agent's
   * slot tokens): the store does not hand them over. Filters and sorts may still name them.
   */
  omit?: readonly string[];
}

export interface FindOptions extends ReadOptions {
  sort?: SortSpec;
  limit?: number;
  skip?: number;
}

/** A field `omit` may name: a plain top-level field name. */
const OMITTABLE_FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The fields of `omit`, checked: a name that is not a plain top-level field is a programming error. */
export function omittedFields(options: ReadOptions | undefined): readonly string[] {
  const omit = options?.omit ?? [];
  for (const field of omit) {
    if (field === 'id' || !OMITTABLE_FIELD.test(field)) throw new Error(`cannot omit field ${JSON.stringify(field)}`);
  }
  return omit;
}

export interface IndexSpec {
  fields: Record<string, 1 | -1>;
  unique?: boolean;
  /** Only documents that have the field are indexed (lets a unique key be optional). Single-field indexes only: a compound unique key is stored as one computed field. */
  sparse?: boolean;
}

/** Every stored document has a string `id`, its primary key. */
export interface StoredDoc {
  id: string;
}

export interface DocumentCollection<T extends StoredDoc> {
  /** Inserts; throws {@link DuplicateKeyError} when a unique index (or the id) is taken. */
  insertOne(doc: T): Promise<T>;
  findOne(filter: Filter, options?: ReadOptions): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  /** Atomically updates the first match; resolves to the document after the update, or null when nothing matched. */
  updateOne(filter: Filter, update: Update): Promise<T | null>;
  /** Updates every match; resolves to the number of documents changed. */
  updateMany(filter: Filter, update: Update): Promise<number>;
  /** Resolves to true when a document was removed. */
  deleteOne(filter: Filter): Promise<boolean>;
  deleteMany(filter: Filter): Promise<number>;
}

export interface DocumentStore {
  readonly kind: 'mongo' | 'sqlite';
  /** Opens (and creates on first use) a collection with its indexes. */
  collection<T extends StoredDoc>(name: string, indexes?: IndexSpec[]): Promise<DocumentCollection<T>>;
  /** Resolves when the store answers; rejects otherwise (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Runs `fn` as one transaction: the store writes it awaits commit together or not at all. Only stores
 * that have one offer it (SQLite); callers work without it, one atomic document write at a time.
 */
export type Transaction = <R>(fn: () => Promise<R>) => Promise<R>;

export class DuplicateKeyError extends Error {
  constructor(
    readonly collection: string,
    cause?: unknown,
  ) {
    super(`duplicate key in ${collection}`, { cause });
    this.name = 'DuplicateKeyError';
  }
}
