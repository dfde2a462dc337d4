import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

export { buildDist } from '@estate/testing';

const ROOT = REPO_ROOT;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export interface RunningService {
  name: string;
  child: ChildProcess;
  output: () => string;
}

export function startService(name: string, env: Record<string, string>): RunningService {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'services', name, 'main.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { name, child, output: () => out };
}

export async function waitReady(url: string, services: RunningService[], timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  for (;;) {
    const dead = services.find((s) => s.child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited early:\n${dead.output()}`);
    try {
      const res = await fetch(`${url}/health/ready`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`not ready after ${timeoutMs} ms:\n${services.map((s) => `--- ${s.name}\n${s.output().slice(-2000)}`).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** SIGTERM, then SIGKILL if a process has not gone within the grace period. */
export async function stopAll(services: RunningService[], graceMs = 10_000): Promise<void> {
  await Promise.all(
    services.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.child.exitCode !== null || s.child.signalCode !== null) return resolve();
          const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
          s.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          s.child.kill('SIGTERM');
        }),
    ),
  );
}

/** What the listings process needs for its search index: the engine, and an index (alias) of this run's own. */
export function searchEnv(elasticsearchUrl: string, run: string): Record<string, string> {
  return { ELASTICSEARCH_URL: elasticsearchUrl, ELASTICSEARCH_INDEX: `sys-${run}-listings` };
}

/** Drops the indices behind a run's alias (by name: wildcard deletes may be refused). */
export async function dropSearchIndex(elasticsearchUrl: string, run: string): Promise<void> {
  const res = await fetch(`${elasticsearchUrl}/sys-${run}-listings-*`);
  if (!res.ok) return;
  for (const index of Object.keys((await res.json()) as Record<string, unknown>)) await fetch(`${elasticsearchUrl}/${index}`, { method: 'DELETE' });
}

/** Polls `check` until it stops throwing: for what a projection (the search index) shows a moment after a write. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() - start > timeoutMs) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Deletes the JetStream streams of a run's NATS namespace (the durable consumers go with them). */
export async function dropNatsNamespace(natsUrl: string, namespace: string): Promise<void> {
  const nc = await connect({ servers: natsUrl, name: `cleanup-${namespace}` });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const s of jsm.streams.list()) if (s.config.name.startsWith(`${namespace}_`)) await jsm.streams.delete(s.config.name);
  } finally {
    await nc.close();
  }
}
