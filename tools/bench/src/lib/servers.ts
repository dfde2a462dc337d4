import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ChildMessage, ParentMessage, ServerSample, TargetKind, TargetSpec } from './protocol';

const START_TIMEOUT_MS = 60_000;
const SAMPLE_TIMEOUT_MS = 5_000;
const GRACEFUL_STOP_MS = 5_000;
const SIGTERM_STOP_MS = 2_000;
/** Log lines forwarded per server before the rest are only counted. */
const FORWARDED_LOG_LINES = 20;

export interface ServerHandle {
  /** A label for logs and results, e.g. `gateway`. */
  readonly name: string;
  /** A forked bench server, or a product process started on its own (sampled from /proc). */
  readonly kind: TargetKind | 'process';
  readonly pid: number;
  readonly origin: string;
  /** Lines the server wrote to stdout/stderr (with the product at `warn`, anything here is worth a look). */
  logLines(): number;
  sample(options?: { resetEventLoopDelay?: boolean }): Promise<ServerSample>;
  stop(): Promise<void>;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  try {
    await withTimeout(exited(child), ms, 'exit');
    return true;
  } catch {
    return false;
  }
}

/**
 * Servers run in child processes (forks of this same bundle in `--serve` mode) so that the load
 * generator's event loop and CPU are not the server's. The pool stops every child it started.
 */
export class ServerPool {
  private readonly children = new Set<ChildProcess>();
  /** CPU profiles of children started since the last `takeProfiles()` (written when each child exits). */
  private profiles: Array<{ server: string; file: string }> = [];

  /** `profileDir`: every child runs under `node --cpu-prof` and leaves its profile there when it exits. */
  constructor(
    private readonly entry: string,
    private readonly logSink: (line: string) => void,
    private readonly profileDir?: string,
  ) {}

  /** True when children run under `node --cpu-prof` (a child killed with SIGKILL leaves no profile). */
  get profiling(): boolean {
    return this.profileDir !== undefined;
  }

  /** The profiles of the children started so far (stop them first: a profile is written at exit), and forgets them. */
  takeProfiles(): Array<{ server: string; file: string }> {
    const taken = this.profiles;
    this.profiles = [];
    return taken;
  }

  private execArgv(name: string): string[] {
    if (!this.profileDir) return [];
    const file = `${name.replace(/[^A-Za-z0-9_-]/g, '_')}-${Date.now()}.cpuprofile`;
    this.profiles.push({ server: name, file: join(this.profileDir, file) });
    return ['--cpu-prof', '--cpu-prof-dir', this.profileDir, '--cpu-prof-name', file];
  }

  /** `startTimeoutMs`: for a start that first writes a large data set (the search bench's seeding). */
  async start(name: string, spec: TargetSpec, options: { startTimeoutMs?: number } = {}): Promise<ServerHandle> {
    const child = fork(this.entry, ['--serve', spec.kind], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      execArgv: this.execArgv(name),
      // As `npm start` and `npm run start:media` run the product (decision 0117).
      env: { MALLOC_ARENA_MAX: '2', ...process.env, NODE_ENV: 'production' },
    });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    // Without a listener a late IPC error (child gone mid-send) would crash the bench.
    child.on('error', (err) => this.logSink(`[${name}] process error: ${err.message}`));

    let lines = 0;
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        lines += 1;
        if (lines <= FORWARDED_LOG_LINES) this.logSink(`[${name}] ${line}`);
        else if (lines === FORWARDED_LOG_LINES + 1) this.logSink(`[${name}] (further output only counted)`);
      });
    }

    const pending = new Map<number, (sample: ServerSample) => void>();
    let nextId = 1;
    child.on('message', (raw: unknown) => {
      const message = raw as ChildMessage;
      if (message.type === 'sample') pending.get(message.id)?.(message.sample);
    });
    const send = (message: ParentMessage): void => {
      if (child.connected) child.send(message);
    };

    const ready = new Promise<number>((resolve, reject) => {
      child.on('message', (raw: unknown) => {
        const message = raw as ChildMessage;
        if (message.type === 'ready') resolve(message.port);
        if (message.type === 'failed') reject(new Error(`${name} failed to start: ${message.message}`));
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`${name} exited during start (code ${code}, signal ${signal})`)),
      );
      child.once('error', reject);
    });
    send({ type: 'start', spec });

    let port: number;
    try {
      port = await withTimeout(ready, options.startTimeoutMs ?? START_TIMEOUT_MS, `starting ${name}`);
    } catch (err) {
      await this.stopChild(child);
      throw err;
    }

    return {
      name,
      kind: spec.kind,
      pid: child.pid ?? -1,
      origin: `http://127.0.0.1:${port}`,
      logLines: () => lines,
      sample: async ({ resetEventLoopDelay = false } = {}) => {
        const id = nextId++;
        const answer = new Promise<ServerSample>((resolve) => pending.set(id, resolve));
        // A server that died under load should say so, not surface as a timeout.
        let onExit: (() => void) | undefined;
        const died = new Promise<never>((_, reject) => {
          onExit = () =>
            reject(
              new Error(`${name} (pid ${child.pid}) is gone: exit code ${child.exitCode}, signal ${child.signalCode}`),
            );
          if (child.exitCode !== null || child.signalCode !== null) onExit();
          else child.once('exit', onExit);
        });
        send({ type: 'sample', id, resetEventLoopDelay });
        try {
          return await withTimeout(Promise.race([answer, died]), SAMPLE_TIMEOUT_MS, `sampling ${name}`);
        } finally {
          pending.delete(id);
          // Frequent sampling (a memory peak) must not pile up exit listeners.
          if (onExit) child.off('exit', onExit);
        }
      },
      stop: () => this.stopChild(child),
    };
  }

  /** Stops every child still running; bounded in time, never throws. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.children].map((child) => this.stopChild(child)));
  }

  /** Asks politely over IPC, then SIGTERM, then SIGKILL; each step bounded. */
  private async stopChild(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage);
    if (await waitForExit(child, GRACEFUL_STOP_MS)) return;
    child.kill('SIGTERM');
    if (await waitForExit(child, SIGTERM_STOP_MS)) return;
    child.kill('SIGKILL');
    await waitForExit(child, SIGTERM_STOP_MS);
  }
}
