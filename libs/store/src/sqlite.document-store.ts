import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  DuplicateKeyError,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type ReadOptions,
  type StoredDoc,
  type Update,
  omittedFields,
} from './document-store';
import { runScoped, scopeOf } from './async-scope';
import { BACKSTOP_PAGES, SqliteCheckpointer } from './sqlite-checkpointer';
import { applyUpdate } from './sqlite-update';
import {
  SqlFilter,
  arrayColumn,
  arrayColumnExpr,
  ident,
  isOperatorObject,
  limitSql,
  StatementCache,
  valueColumn,
  valueExpr,
} from './sqlite-query';

type Raw = Record<string, unknown>;
type Row = { id: string; doc: string };

export interface SqliteStoreOptions {
  /** How long a statement waits for another process's write lock before failing with SQLITE_BUSY. */
  busyTimeoutMs?: number;
  /**
   * Checkpoints the write-ahead log on a worker thread instead of inside commits (a long-running server's stores;
   * see sqlite-checkpointer.ts). Off for short-lived tools, whose last close checkpoints anyway.
   */
  backgroundCheckpoints?: boolean;
  /**
   * The most memory SQLite keeps this file's pages in, KiB (SQLite's default: 16,000). Each connection's cache fills
   * to it as the file grows; reads past it come from the operating system's file cache.
   */
  cacheKiB?: number;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000;

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

function toDoc<T>(row: Row): T {
  return { id: row.id, ...(JSON.parse(row.doc) as Raw) } as T;
}

/** The selected document: the stored text, or without the fields of `omit` (removed by SQLite, never parsed here). */
function docColumn(options: ReadOptions | undefined): string {
  const omit = omittedFields(options);
  return omit.length === 0 ? 'doc' : `json_remove(doc, ${omit.map((field) => `'$.${field}'`).join(', ')}) AS doc`;
}

function indexName(table: string, index: IndexSpec): string {
  const fields = Object.entries(index.fields).map(([f, dir]) => `${f}_${dir}`);
  return [table, ...fields, ...(index.unique ? ['unique'] : []), ...(index.sparse ? ['sparse'] : [])].join('$');
}

/** The transaction of {@link SqliteDocumentStore.transaction} holding the connection, and when it ends. */
interface OpenTransaction {
  token: symbol;
  done: Promise<void>;
}

export class SqliteCollection<T extends StoredDoc> implements DocumentCollection<T> {
  private readonly table: string;
  /** Indexed paths once seen holding an array: they stay so (a probe is cheap, but needless once true). */
  private readonly arrayPaths = new Set<string>();

  constructor(
    private readonly store: SqliteDocumentStore,
    private readonly name: string,
    private readonly columns: ReadonlySet<string>,
  ) {
    this.table = ident(name);
  }

  async insertOne(doc: T): Promise<T> {
    await this.store.turn();
    const { id, ...rest } = doc;
    if (typeof id !== 'string') throw new Error(`${this.name}: a document id must be a string`);
    try {
      this.store.statement(`INSERT INTO ${this.table} (id, doc) VALUES (?, ?)`).run(id, JSON.stringify(rest));
    } catch (err) {
      throw this.mapError(err);
    }
    return doc;
  }

  async findOne(filter: Filter, options?: ReadOptions): Promise<T | null> {
    await this.store.turn();
    const doc = docColumn(options);
    const found = this.firstWithoutProbe(filter, doc);
    const row = found === undefined ? this.read((q) => this.first(q.where(filter), q.params, doc)) : found;
    return row ? toDoc<T>(row) : null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    await this.store.turn();
    const rows = this.read((q) => {
      const { sql, params } = this.select(q, filter, options);
      return this.store.statement(sql).all(...params) as Row[];
    });
    return rows.map((row) => toDoc<T>(row));
  }

  /** SQLite's plan for `find(filter, options)`, one line per step (to check that an index is used). */
  async queryPlan(filter: Filter, options: FindOptions = {}): Promise<string[]> {
    await this.store.turn();
    return this.read((q) => {
      const { sql, params } = this.select(q, filter, options);
      return (this.store.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
        (r) => r.detail,
      );
    });
  }

  async count(filter: Filter): Promise<number> {
    await this.store.turn();
    return this.read((q) => {
      const sql = `SELECT count(*) AS n FROM ${this.table} WHERE ${q.where(filter)}`;
      return (this.store.statement(sql).get(...q.params) as { n: number }).n;
    });
  }

  async updateOne(filter: Filter, update: Update): Promise<T | null> {
    await this.store.turn();
    const [doc] = this.update(filter, update, 1);
    return doc ?? null;
  }

  async updateMany(filter: Filter, update: Update): Promise<number> {
    await this.store.turn();
    return this.update(filter, update, Infinity).length;
  }

  async deleteOne(filter: Filter): Promise<boolean> {
    return (await this.delete(filter, true)) > 0;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.delete(filter, false);
  }

  /** Reads the matches, applies the update to each parsed document and writes it back, in one write transaction. */
  private update(filter: Filter, update: Update, max: number): T[] {
    try {
      return this.store.write(() => {
        const q = this.query();
        const limit = Number.isFinite(max) ? ` ${limitSql(max)}` : '';
        const rows = this.store
          .statement(`SELECT id, doc FROM ${this.table} WHERE ${q.where(filter)}${limit}`)
          .all(...q.params) as Row[];
        const write = this.store.statement(`UPDATE ${this.table} SET doc = ? WHERE id = ?`);
        return rows.map((row) => {
          const doc = JSON.parse(row.doc) as Raw;
          applyUpdate(doc, update);
          const text = JSON.stringify(doc);
          if (text !== row.doc) write.run(text, row.id);
          return toDoc<T>({ id: row.id, doc: text });
        });
      });
    } catch (err) {
      throw this.mapError(err);
    }
  }

  private async delete(filter: Filter, one: boolean): Promise<number> {
    await this.store.turn();
    return this.store.write(() => {
      const q = this.query();
      const where = q.where(filter);
      const sql = one
        ? `DELETE FROM ${this.table} WHERE rowid = (SELECT rowid FROM ${this.table} WHERE ${where} LIMIT 1)`
        : `DELETE FROM ${this.table} WHERE ${where}`;
      return this.store.statement(sql).run(...q.params).changes;
    });
  }

  private select(q: SqlFilter, filter: Filter, options: FindOptions): { sql: string; params: unknown[] } {
    let sql = `SELECT id, ${docColumn(options)} FROM ${this.table} WHERE ${q.where(filter)}`;
    if (options.sort && Object.keys(options.sort).length > 0) sql += ` ORDER BY ${q.orderBy(options.sort)}`;
    const params: unknown[] = [...q.params];
    if (options.limit !== undefined || options.skip) {
      sql += ` ${limitSql(options.limit ?? -1)} OFFSET ?`;
      params.push(options.skip ?? 0);
    }
    return { sql, params };
  }

  /**
   * Builds a query and runs it. Most need no array probe (the primary key, paths seen holding arrays): they are
   * one statement, a snapshot of its own. A query that probes runs in a read transaction begun before its first
   * probe, so that the probes and the query see the same data even when another process writes in between.
   */
  private read<R>(body: (q: SqlFilter) => R): R {
    let endSnapshot: (() => void) | undefined;
    const q = new SqlFilter({
      columns: this.columns,
      holdsArrays: (path) => {
        if (this.arrayPaths.has(path)) return true;
        endSnapshot ??= this.store.beginRead();
        return this.holdsArrays(path);
      },
    });
    try {
      return body(q);
    } finally {
      endSnapshot?.();
    }
  }

  /**
   * The first match found without an array probe, in one statement: when no path needs one (the primary key,
   * paths known to hold arrays), or when the paths that would are top-level equalities, whose direct matches
   * are matches whatever other documents hold (array members only add matches): a lookup by a unique key (an
   * API key's hash) is then one statement. Null when there is surely none; undefined when only a probing read
   * can tell (no direct match, or a path under an operator, `$or` or `$and`).
   */
  private firstWithoutProbe(filter: Filter, doc: string): Row | null | undefined {
    if ('$or' in filter || '$and' in filter) return undefined;
    let guessed = false;
    let unsure = false;
    const q = new SqlFilter({
      columns: this.columns,
      holdsArrays: (path) => {
        if (this.arrayPaths.has(path)) return true;
        if (isOperatorObject(filter[path])) unsure = true;
        else guessed = true;
        return false;
      },
    });
    const where = q.where(filter);
    if (unsure) return undefined;
    return this.first(where, q.params, doc) ?? (guessed ? undefined : null);
  }

  private first(where: string, params: unknown[], doc: string): Row | undefined {
    return this.store.statement(`SELECT id, ${doc} FROM ${this.table} WHERE ${where} LIMIT 1`).get(...params) as
      Row | undefined;
  }

  private query(): SqlFilter {
    return new SqlFilter({ columns: this.columns, holdsArrays: (path) => this.holdsArrays(path) });
  }

  private holdsArrays(path: string): boolean {
    if (this.arrayPaths.has(path)) return true;
    const column = ident(arrayColumn(path));
    const found = this.store.statement(`SELECT 1 FROM ${this.table} WHERE ${column} = 1 LIMIT 1`).get() !== undefined;
    if (found) this.arrayPaths.add(path);
    return found;
  }

  private mapError(err: unknown): unknown {
    return isUniqueViolation(err) ? new DuplicateKeyError(this.name, err) : err;
  }
}

/**
 * Embedded adapter on one SQLite file (better-sqlite3, synchronous). One table per collection, `id` and the
 * document as JSON text; every field named in an index is a generated column with the SQL index, so filters
 * and sorts on it are answered from the index. WAL lets readers in other processes (the CLI next to the
 * server) run alongside the one writer; writes take the write lock up front (`BEGIN IMMEDIATE`), so a
 * read-modify-write update is atomic across connections and processes. Updates are applied in JS to the
 * parsed document. Pass ':memory:' for a private in-memory database (tests).
 */
export class SqliteDocumentStore implements DocumentStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements: StatementCache;
  private readonly collections = new Map<string, SqliteCollection<StoredDoc>>();
  private open: OpenTransaction | null = null;
  private checkpointer?: SqliteCheckpointer;

  constructor(
    readonly path: string,
    options: SqliteStoreOptions = {},
  ) {
    if (path !== ':memory:' && path !== '') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.statements = new StatementCache(this.db);
    try {
      // Before anything that may wait on another process's lock (switching to WAL does).
      this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS}`);
      this.db.pragma('journal_mode = WAL');
      // In WAL mode NORMAL loses no committed data on a process crash, only possibly the last commits on power loss.
      this.db.pragma('synchronous = NORMAL');
      // Savepoint and statement journals in memory: SQLite copies every page a unit of work (a savepoint) or a
      // statement with triggers first changes, and in files it writes them to a new temporary file past 64 KiB,
      // which most listing writes reach (docs/decisions/0135-sqlite-journals-in-memory.md).
      this.db.pragma('temp_store = MEMORY');
      if (options.cacheKiB !== undefined) this.db.pragma(`cache_size = ${-Math.max(1, Math.floor(options.cacheKiB))}`);
      if (options.backgroundCheckpoints && path !== ':memory:' && path !== '') {
        this.db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
        this.checkpointer = SqliteCheckpointer.acquire(resolve(path));
      }
    } catch (err) {
      this.db.close();
      throw err;
    }
  }

  static open(path: string, options: SqliteStoreOptions = {}): SqliteDocumentStore {
    return new SqliteDocumentStore(path, options);
  }

  /**
   * A watcher that answers true when another connection (another process, such as the CLI on the same data folder)
   * committed to this file since it last answered; this connection's own commits do not count.
   */
  changesByOthers(): () => boolean {
    const version = this.db.prepare('PRAGMA data_version').pluck();
    let seen = version.get();
    return () => {
      const now = version.get();
      if (now === seen) return false;
      seen = now;
      return true;
    };
  }

  /** The connection, for tables of the same service kept beside the documents (the listing search index). */
  get database(): Database.Database {
    return this.db;
  }

  async collection<T extends StoredDoc>(name: string, indexes: IndexSpec[] = []): Promise<SqliteCollection<T>> {
    await this.turn();
    let col = this.collections.get(name);
    if (!col) {
      col = new SqliteCollection<StoredDoc>(this, name, this.prepare(name, indexes));
      this.collections.set(name, col);
    }
    return col as unknown as SqliteCollection<T>;
  }

  /**
   * Creates the table, and adds what the declared indexes need and it lacks: generated columns (VIRTUAL,
   * the only kind ALTER TABLE can add) and indexes. Indexes are never dropped: an older process may still use them.
   */
  private prepare(name: string, indexes: IndexSpec[]): Set<string> {
    if (name.startsWith('sqlite_')) throw new Error(`collection name ${name} is reserved by SQLite`);
    const table = ident(name);
    const paths = new Set(indexes.flatMap((index) => Object.keys(index.fields)).filter((f) => f !== 'id'));
    this.write(() => {
      this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL)`);
      const existing = new Set(
        (this.db.prepare(`PRAGMA table_xinfo(${table})`).all() as { name: string }[]).map((c) => c.name),
      );
      for (const path of paths) {
        if (!existing.has(valueColumn(path))) {
          this.db.exec(
            `ALTER TABLE ${table} ADD COLUMN ${ident(valueColumn(path))} GENERATED ALWAYS AS (${valueExpr(path)}) VIRTUAL`,
          );
        }
        if (!existing.has(arrayColumn(path))) {
          this.db.exec(
            `ALTER TABLE ${table} ADD COLUMN ${ident(arrayColumn(path))} GENERATED ALWAYS AS (${arrayColumnExpr(path)}) VIRTUAL`,
          );
        }
        const flag = ident(arrayColumn(path));
        this.db.exec(
          `CREATE INDEX IF NOT EXISTS ${ident(`${name}$${path}[]`)} ON ${table} (${flag}) WHERE ${flag} IS NOT NULL`,
        );
      }
      for (const index of indexes) {
        const fields = Object.entries(index.fields);
        if (fields.length === 1 && fields[0][0] === 'id') continue; // the primary key is indexed already
        const cols = fields.map(
          ([f, dir]) => `${f === 'id' ? 'id' : ident(valueColumn(f))} ${dir === -1 ? 'DESC' : 'ASC'}`,
        );
        const sparse = index.sparse
          ? ` WHERE ${fields.map(([f]) => `${f === 'id' ? 'id' : ident(valueColumn(f))} IS NOT NULL`).join(' OR ')}`
          : '';
        this.db.exec(
          `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${ident(indexName(name, index))} ON ${table} (${cols.join(', ')})${sparse}`,
        );
      }
    });
    return paths;
  }

  /**
   * Runs `fn` in one write transaction: every store operation it awaits is part of it, and commits or rolls
   * back with it. Other operations of this process wait until it ends, other processes' writers until their
   * busy timeout: keep `fn` short and free of network calls. Nested calls join the open transaction.
   */
  async transaction<R>(fn: () => Promise<R>): Promise<R> {
    if (this.open && scopeOf(this) === this.open.token) return fn();
    // Not `await this.turn()` when free: the transaction must start now, before operations called after this one.
    while (this.open) await this.open.done;
    let end!: () => void;
    const token = Symbol('transaction');
    this.open = { token, done: new Promise<void>((resolve) => (end = resolve)) };
    try {
      this.db.exec('BEGIN IMMEDIATE');
      const result = await runScoped(this, token, fn);
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    } finally {
      this.open = null;
      end();
    }
  }

  /** Resolves when this caller may use the connection: no transaction is open, or it runs inside the open one. */
  async turn(): Promise<void> {
    while (this.open && scopeOf(this) !== this.open.token) await this.open.done;
  }

  /**
   * Begins a read transaction, so that the statements run until its end (the returned function) see one snapshot;
   * inside an open transaction, that one is the snapshot. Synchronous work only: nothing else runs before the end.
   */
  beginRead(): () => void {
    if (this.db.inTransaction) return () => undefined;
    this.statement('BEGIN').run();
    return () => {
      if (this.db.inTransaction) this.statement('COMMIT').run();
    };
  }

  /** Runs writes holding the write lock from the start, so what they read cannot change before they write. */
  write<R>(body: () => R): R {
    return this.db.transaction(body).immediate();
  }

  statement(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    // The worker's connection goes first: the last one to close checkpoints the log and removes it.
    const checkpointer = this.checkpointer;
    this.checkpointer = undefined;
    await checkpointer?.release(resolve(this.path));
    await this.turn();
    this.statements.clear();
    this.collections.clear();
    this.db.close();
  }
}
