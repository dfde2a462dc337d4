import { Worker } from 'node:worker_threads';

/**
 * Copies SQLite's write-ahead log back into the database files on a worker thread, so that the commits of the
 * request path only append to the log (docs/decisions/0128-sqlite-checkpoints-off-the-event-loop.md).
 *
 * By default the connection that commits also checkpoints, inside that commit, every 1,000 pages: a copy of the
 * changed pages and two fsyncs, measured at 1 to 47 ms on the event loop under a stream of writes. Here a worker
 * holds a second connection to each file and runs a PASSIVE checkpoint (never waits for, nor blocks, a writer)
 * every `intervalMs`; the committing connection keeps its own automatic checkpoint only as a backstop, at
 * `BACKSTOP_PAGES`, for a log the worker could not empty (a long reader, a worker that fell behind).
 */
export class SqliteCheckpointer {
  private static current: SqliteCheckpointer | null = null;
  private readonly files = new Map<string, number>();
  private closing: Promise<void> | null = null;

  private constructor(private readonly worker: Worker) {
    worker.unref();
    // A checkpoint that fails is retried on the next tick; a worker that dies leaves the backstop checkpoints.
    worker.on('error', () => undefined);
  }

  /** The process's checkpointer, started on first use and ended when its last file is released. */
  static acquire(path: string): SqliteCheckpointer {
    let self = SqliteCheckpointer.current;
    if (!self) {
      self = new SqliteCheckpointer(
        new Worker(WORKER_SOURCE, {
          eval: true,
          workerData: { driver: require.resolve('better-sqlite3'), intervalMs: INTERVAL_MS },
        }),
      );
      SqliteCheckpointer.current = self;
    }
    const count = self.files.get(path) ?? 0;
    self.files.set(path, count + 1);
    if (count === 0) self.worker.postMessage({ add: path });
    return self;
  }

  /** Stops checkpointing `path` (its connection in the worker is closed when this resolves). */
  async release(path: string): Promise<void> {
    const count = this.files.get(path) ?? 0;
    if (count > 1) {
      this.files.set(path, count - 1);
      return;
    }
    this.files.delete(path);
    if (this.files.size > 0) {
      await this.request({ remove: path });
      return;
    }
    if (SqliteCheckpointer.current === this) SqliteCheckpointer.current = null;
    this.closing ??= this.worker.terminate().then(() => undefined);
    await this.closing;
  }

  private request(message: { remove: string }): Promise<void> {
    return new Promise((resolve) => {
      const onMessage = (reply: { removed?: string }) => {
        if (reply.removed !== message.remove) return;
        this.worker.off('message', onMessage).off('exit', onExit);
        resolve();
      };
      const onExit = () => {
        this.worker.off('message', onMessage);
        resolve();
      };
      this.worker.on('message', onMessage).once('exit', onExit);
      this.worker.postMessage(message);
    });
  }
}

/** How often the worker checkpoints each file. */
const INTERVAL_MS = 100;

/** The committing connection's own automatic checkpoint, kept as a backstop (pages of 4 KiB: 32 MiB). */
export const BACKSTOP_PAGES = 8192;

// Plain JavaScript, evaluated as the worker's code: it runs the same from the bundle and from the sources.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const open = new Map();
parentPort.on('message', (message) => {
  if (message.add && !open.has(message.add)) {
    try {
      const db = new Database(message.add, { fileMustExist: true });
      db.pragma('busy_timeout = 0');
      open.set(message.add, db);
    } catch {}
  }
  if (message.remove) {
    const db = open.get(message.remove);
    open.delete(message.remove);
    try { db?.close(); } catch {}
    parentPort.postMessage({ removed: message.remove });
  }
});
setInterval(() => {
  for (const [path, db] of open) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch (err) {
      if (!String(err && err.code).startsWith('SQLITE_BUSY')) {
        open.delete(path);
        try { db.close(); } catch {}
      }
    }
  }
}, workerData.intervalMs);
`;
