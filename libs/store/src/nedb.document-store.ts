import Datastore from '@seald-io/nedb';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DuplicateKeyError,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type StoredDoc,
  type Update,
} from './document-store';
import { fromEngineDoc, toEngineFilter, toEngineSort } from './id-mapping';

type Engine = Datastore<Record<string, unknown>>;

const COMPACT_EVERY_MS = 10 * 60 * 1000;

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { errorType?: string }).errorType === 'uniqueViolated';
}

class NedbCollection<T extends StoredDoc> implements DocumentCollection<T> {
  constructor(
    private readonly name: string,
    private readonly db: Engine,
  ) {}

  async insertOne(doc: T): Promise<T> {
    const { id, ...rest } = doc;
    try {
      await this.db.insertAsync({ ...rest, _id: id });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(this.name, err);
      throw err;
    }
    return doc;
  }

  async findOne(filter: Filter): Promise<T | null> {
    return fromEngineDoc<T>(await this.db.findOneAsync(toEngineFilter(filter)));
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.db.findAsync(toEngineFilter(filter));
    if (options.sort) cursor = cursor.sort(toEngineSort(options.sort));
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit !== undefined) cursor = cursor.limit(options.limit);
    const docs = (await cursor) as unknown as Record<string, unknown>[];
    return docs.map((d) => fromEngineDoc<T>(d) as T);
  }

  async count(filter: Filter): Promise<number> {
    return (await this.db.countAsync(toEngineFilter(filter))) as unknown as number;
  }

  async updateOne(filter: Filter, update: Update): Promise<T | null> {
    try {
      const res = await this.db.updateAsync(toEngineFilter(filter), update, { multi: false, returnUpdatedDocs: true });
      return res.numAffected > 0 ? fromEngineDoc<T>(res.affectedDocuments as Record<string, unknown>) : null;
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(this.name, err);
      throw err;
    }
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    const res = await this.db.updateAsync(toEngineFilter(filter), update, { multi: true });
    return res.numAffected;
  }

  async deleteOne(filter: Filter): Promise<boolean> {
    return (await this.db.removeAsync(toEngineFilter(filter), { multi: false })) > 0;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.db.removeAsync(toEngineFilter(filter), { multi: true });
  }
}

/**
 * Embedded adapter: one append-only NeDB file per collection under `dir`, compacted periodically
 * and on close. Writes reach the file before the promise resolves, so a restart loses nothing.
 * Without `dir` the store lives in memory only (tests).
 */
export class NedbDocumentStore implements DocumentStore {
  readonly kind = 'nedb' as const;
  private readonly engines = new Map<string, Promise<Engine>>();

  constructor(private readonly dir?: string) {
    if (dir) mkdirSync(dir, { recursive: true });
  }

  collection<T extends StoredDoc>(name: string, indexes: IndexSpec[] = []): Promise<DocumentCollection<T>> {
    let engine = this.engines.get(name);
    if (!engine) {
      engine = this.open(name, indexes);
      this.engines.set(name, engine);
    }
    return engine.then((db) => new NedbCollection<T>(name, db));
  }

  private async open(name: string, indexes: IndexSpec[]): Promise<Engine> {
    const db: Engine = this.dir
      ? new Datastore({ filename: join(this.dir, `${name}.db`) })
      : new Datastore({ inMemoryOnly: true });
    await db.loadDatabaseAsync();
    for (const index of indexes) {
      const fields = Object.keys(index.fields).map((f) => (f === 'id' ? '_id' : f));
      await db.ensureIndexAsync({
        fieldName: fields.length === 1 ? fields[0] : fields,
        unique: index.unique,
        sparse: index.sparse,
      });
    }
    if (this.dir) db.setAutocompactionInterval(COMPACT_EVERY_MS);
    return db;
  }

  async ping(): Promise<void> {
    // In-process: always answers once constructed.
  }

  async close(): Promise<void> {
    const engines = await Promise.all(this.engines.values());
    this.engines.clear();
    for (const db of engines) {
      db.stopAutocompaction();
      if (this.dir) await db.compactDatafileAsync();
    }
  }
}
