import { Worker } from 'node:worker_threads';

/**
 * A second connection to the index's file, on a thread of its own, that counts a search's matches while the main
 * thread ranks its page (decision 0141). It reads what is committed, like any other connection; it never writes
 * (`query_only`).
 *
 * The worker's source is a string: the same module runs from TypeScript under the tests and from the built bundle,
 * and neither has to ship a separate worker file.
 */
/** Prepared statements the worker keeps: a search has few count shapes, bounded as the index's own cache is. */
const WORKER_STATEMENTS = 50;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('query_only = ON');
} catch (err) {
  // A plain Error crosses to the parent thread with its message; the driver's own error class does not.
  throw new Error(String(err && err.message));
}
const prepared = new Map();
parentPort.on('message', ({ id, sql, params }) => {
  try {
    let statement = prepared.get(sql);
    if (!statement) {
      if (prepared.size >= ${WORKER_STATEMENTS}) prepared.clear();
      statement = db.prepare(sql).pluck();
      prepared.set(sql, statement);
    }
    parentPort.postMessage({ id, value: statement.get(...params) });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message), code: err && err.code });
  }
});
`;

interface Pending {
  resolve(value: number): void;
  reject(err: Error): void;
}

export class CountReaderFailed extends Error {}

/** Threads that may stop in a row (none of them having counted) before the reader stops making new ones. */
const THREADS_LOST_BEFORE_GIVING_UP = 3;

export class SqliteCountReader {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private next = 0;
  private closed?: string;
  /** Threads lost since one last counted. */
  private lost = 0;

  /** `file`: the index's database file (an in-memory database has no second connection: no reader for it). */
  constructor(private readonly file: string) {}

  /** The single number the statement's first row holds (`SELECT count(*) …`), from the reader's connection. */
  count(sql: string, params: readonly unknown[]): Promise<number> {
    if (this.closed) return Promise.reject(new CountReaderFailed(this.closed));
    const worker = this.start();
    const id = this.next++;
    return new Promise<number>((resolve, reject) => {
      // While a count is awaited the thread keeps the process alive; idle, it never does.
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params });
    });
  }

  async close(): Promise<void> {
    this.closed = 'the count reader is closed';
    const worker = this.worker;
    this.worker = undefined;
    this.fail(new CountReaderFailed('the count reader is closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: require.resolve('better-sqlite3'), file: this.file },
    });
    worker.on('message', (message: { id: number; value?: unknown; error?: string; code?: string }) => {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) worker.unref();
      this.lost = 0;
      if (message.error !== undefined) {
        waiting.reject(Object.assign(new CountReaderFailed(message.error), { code: message.code }));
      } else waiting.resolve(Number(message.value ?? 0));
    });
    // A thread that fails is made again at the next count; what it was counting is counted by the caller. A file the
    // reader cannot open (moved, or not readable) fails every thread at once: after a few, it stops making them.
    const lose = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.fail(err);
      if (++this.lost >= THREADS_LOST_BEFORE_GIVING_UP)
        this.closed = `the count reader stopped after ${this.lost} threads in a row failed`;
    };
    worker.on('error', (err) => lose(new CountReaderFailed(`the count reader failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => lose(new CountReaderFailed(`the count reader stopped (exit code ${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private fail(err: Error): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const p of waiting) p.reject(err);
  }
}
