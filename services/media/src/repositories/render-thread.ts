import { PassThrough, type Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { RenditionSpec } from '../image.rules';
import { makeRenditions, type RenditionRecipe } from './rendition-pipeline';

/** Where a render thread's files go, and what it is told when the image fails. */
export interface FileSink {
  /** Hands one file's bytes, as they arrive, to the store; resolves or rejects as the store's write does. */
  open(spec: RenditionSpec, data: Readable): Promise<void>;
  /** The image could not be rendered (`err.message` is the library's). */
  imageFailed(err: Error): void;
}

/**
 * The render's own work in a worker thread: {@link makeRenditions}' source, on sharp loaded in the thread. Each
 * file's encoded bytes are posted to the parent as sharp hands them out; a `stop` ends the render at the file being
 * encoded. The source is a string so that the same module runs from TypeScript under the tests and from the bundle.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sharp = require(workerData.sharp);
sharp.cache(false);
const makeRenditions = (${makeRenditions.toString()});
class Stopped extends Error {}
let current;
parentPort.on('message', (message) => {
  if (message.type === 'stop') {
    if (current && current.id === message.id) {
      current.stopped = true;
      if (current.encoding) current.encoding.destroy();
    }
    return;
  }
  render(message.id, Buffer.from(message.input.buffer, message.input.byteOffset, message.input.byteLength), message.recipe);
});
async function render(id, input, recipe) {
  const job = { id, stopped: false, encoding: undefined };
  current = job;
  let file = 0;
  const output = (spec, encoded) =>
    new Promise((resolve, reject) => {
      if (job.stopped) return reject(new Stopped());
      const n = file++;
      job.encoding = encoded;
      parentPort.postMessage({ type: 'file', id, file: n, spec });
      encoded.on('data', (data) => parentPort.postMessage({ type: 'chunk', id, file: n, data }));
      encoded.once('end', () => {
        parentPort.postMessage({ type: 'end', id, file: n });
        resolve();
      });
      encoded.once('error', reject);
      encoded.once('close', () => reject(new Stopped()));
    });
  try {
    const size = await makeRenditions(sharp, input, recipe, output);
    parentPort.postMessage({ type: 'done', id, size });
  } catch (err) {
    parentPort.postMessage(
      job.stopped || err instanceof Stopped ? { type: 'stopped', id } : { type: 'failed', id, message: String(err && err.message) },
    );
  } finally {
    if (current === job) current = undefined;
  }
}
`;

type FromThread =
  | { type: 'file'; id: number; file: number; spec: RenditionSpec }
  | { type: 'chunk'; id: number; file: number; data: Uint8Array }
  | { type: 'end'; id: number; file: number }
  | { type: 'done'; id: number; size: { width: number; height: number } }
  | { type: 'failed'; id: number; message: string }
  | { type: 'stopped'; id: number };

interface Job {
  id: number;
  onMessage(message: FromThread): void;
  onLost(err: Error): void;
}

/** The render thread stopped (it crashed or was terminated) during a render: not the image's fault; try again. */
export class RenderThreadLost extends Error {}

class RenderThread {
  readonly worker: Worker;
  job?: Job;
  lost?: Error;
  /** Ends the thread once it has been idle a while. */
  retiring?: NodeJS.Timeout;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { sharp: require.resolve('sharp') },
    });
    this.worker.on('message', (message: FromThread) => {
      if (this.job?.id === message.id) this.job.onMessage(message);
    });
    this.worker.on('error', (err) => this.lose(new RenderThreadLost(`the render thread failed: ${err.message}`)));
    this.worker.on('exit', (code) => this.lose(new RenderThreadLost(`the render thread stopped (exit code ${code})`)));
    this.worker.unref();
  }

  /** The thread is gone, or going: its render fails, and it takes no other. */
  lose(err: Error): void {
    this.lost ??= err;
    const job = this.job;
    this.job = undefined;
    job?.onLost(err);
  }
}

/**
 * Renders in worker threads, so that the decoded pixels of a photo (36 MB for 12 megapixels) are allocated and
 * collected in a thread's small heap: in the service's own thread, each render started several full garbage
 * collections of the service's heap, and its pipeline's JavaScript ran between the requests. Threads are made as
 * renders need them and kept for the next; one idle for `idleMs` ends, and the memory its last render left (freed
 * at its heap's next collection, which an idle thread does not run) goes with it. The caller bounds how many renders
 * run at once.
 */
export class RenderThreads {
  private readonly idle: RenderThread[] = [];
  private readonly busy = new Set<RenderThread>();
  private next = 0;

  constructor(private readonly idleMs = 10_000) {}

  /** Threads running, busy or idle. */
  get size(): number {
    return this.idle.length + this.busy.size;
  }

  /**
   * Makes the files of `recipe` from `input` in a thread, each streamed to `sink` as it is encoded. Resolves with the
   * image's size, or undefined when the image failed (`sink.imageFailed` was told why) or a store gave up (its write
   * says why); rejects with {@link RenderThreadLost} if the thread stopped.
   */
  async render(
    input: Buffer,
    recipe: RenditionRecipe,
    sink: FileSink,
  ): Promise<{ width: number; height: number } | undefined> {
    const thread = this.take();
    try {
      return await this.run(thread, input, recipe, sink);
    } finally {
      thread.job = undefined;
      this.busy.delete(thread);
      if (!thread.lost) {
        thread.worker.unref();
        this.idle.push(thread);
        thread.retiring = setTimeout(() => this.retire(thread), this.idleMs).unref();
      }
    }
  }

  /** Ends every thread (a render still running rejects with RenderThreadLost); a later render starts a new one. */
  async stop(): Promise<void> {
    const threads = [...this.idle.splice(0), ...this.busy];
    for (const thread of threads) clearTimeout(thread.retiring);
    for (const thread of this.busy) thread.lose(new RenderThreadLost('the render thread was stopped'));
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private retire(thread: RenderThread): void {
    const at = this.idle.indexOf(thread);
    if (at < 0) return;
    this.idle.splice(at, 1);
    thread.lose(new RenderThreadLost('the render thread was idle'));
    void thread.worker.terminate();
  }

  private take(): RenderThread {
    let thread = this.idle.pop();
    // A thread that died while idle is dropped here.
    while (thread?.lost) thread = this.idle.pop();
    clearTimeout(thread?.retiring);
    thread ??= new RenderThread();
    this.busy.add(thread);
    thread.worker.ref();
    return thread;
  }

  private run(
    thread: RenderThread,
    input: Buffer,
    recipe: RenditionRecipe,
    sink: FileSink,
  ): Promise<{ width: number; height: number } | undefined> {
    const id = this.next++;
    const files = new Map<number, PassThrough>();
    const stop = () => thread.worker.postMessage({ type: 'stop', id });
    const unfinished = (err?: Error) => {
      for (const data of files.values()) if (!data.writableEnded) data.destroy(err);
    };
    return new Promise((resolve, reject) => {
      if (thread.lost) return reject(thread.lost);
      thread.job = {
        id,
        onMessage: (message) => {
          switch (message.type) {
            case 'file': {
              const data = new PassThrough();
              files.set(message.file, data);
              // A store that fails, or stops reading before the end, stops the render (its write says why).
              data.once('close', () => {
                if (!data.readableEnded) stop();
              });
              sink.open(message.spec, data).catch(stop);
              return;
            }
            case 'chunk':
              files
                .get(message.file)
                ?.write(Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength));
              return;
            case 'end':
              files.get(message.file)?.end();
              return;
            case 'done':
              return resolve(message.size);
            case 'failed': {
              const err = new Error(message.message);
              sink.imageFailed(err);
              unfinished(err);
              return resolve(undefined);
            }
            case 'stopped':
              unfinished();
              return resolve(undefined);
          }
        },
        onLost: (err) => {
          unfinished(err);
          reject(err);
        },
      };
      thread.worker.postMessage({ type: 'render', id, input, recipe });
    });
  }
}
