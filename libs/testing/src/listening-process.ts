import { spawn, type ChildProcess } from 'node:child_process';
import type { ListeningMessage } from '@estate/platform/lifecycle';

export interface ListeningProcess {
  child: ChildProcess;
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** The URL it announced once listening; rejects with its output if it exits first or stays silent too long. */
  listening: Promise<string>;
}

/**
 * Starts a Node entry point of dist/ (a service's or the embedded product's `main.js`) with an IPC channel and
 * learns the URL it listens on from its announcement. With `PORT=0` the system picks the port at bind time: a port
 * picked free here and bound there later may be taken by another process in between.
 */
export function spawnListening(
  name: string,
  entry: string,
  options: { cwd: string; env: Record<string, string>; timeoutMs?: number },
): ListeningProcess {
  const child = spawn(process.execPath, [entry], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const listening = new Promise<string>((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${name} not listening after ${timeoutMs} ms:\n${out.slice(-3000)}`));
    }, timeoutMs);
    const onMessage = (m: Partial<ListeningMessage>) => {
      if (m?.type !== 'listening' || typeof m.url !== 'string') return;
      done();
      resolve(m.url);
    };
    // On close rather than exit: its output is read to the end by then.
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      done();
      reject(new Error(`${name} exited early (${signal ?? `exit code ${code}`}):\n${out}`));
    };
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('close', onExit);
    };
    child.on('message', onMessage);
    child.once('close', onExit);
  });
  // Awaited by the caller when it needs the URL; a failure before then is not an unhandled rejection.
  listening.catch(() => undefined);
  return { child, output: () => out, listening };
}
