import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { fixedPort, REPO_ROOT, startOnSamePort } from '@estate/testing';

/**
 * A store engine of the test's own (FerretDB on its own port and run dir, started by scripts/engines/up.sh like
 * the shared one), which a fault test may stop and start again without disturbing anyone else. With the
 * PostgreSQL backend it shares the PostgreSQL server on PG_PORT when one runs there (up.sh starts one in the run
 * dir otherwise).
 */
export interface PrivateStore {
  url: string;
  /** Starts FerretDB (again, on the same port), resolving after up.sh's readiness check. */
  start(): Promise<void>;
  /** Stops FerretDB (SIGKILL: connections drop at once, as when a machine goes away) and waits until it is gone. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function privateStore(): Promise<PrivateStore> {
  // Its clients are given the address before it first starts, and it comes back on it after an outage.
  const port = await fixedPort();
  const runDir = mkdtempSync(join(tmpdir(), 'estate-fault-store-'));
  const env = { ...process.env, MONGO_PORT: String(port), ENGINES_RUN_DIR: runDir };
  // Not execFileSync: the test's own clients keep running (and timing their requests) while the store starts.
  const script = async (name: string, ...args: string[]) => {
    await promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 'engines', name), ...args], {
      env,
      timeout: 300_000,
    });
  };
  const pid = (): number | null => {
    try {
      return Number(readFileSync(join(runDir, 'pids', 'ferretdb.pid'), 'utf8').trim()) || null;
    } catch {
      return null;
    }
  };
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  const store: PrivateStore = {
    url: `mongodb://127.0.0.1:${port}/estate`,
    start: () => startOnSamePort(() => script('up.sh', 'mongo')),
    async stop() {
      const p = pid();
      if (p === null || !alive(p)) return;
      process.kill(p, 'SIGKILL');
      while (alive(p)) await sleep(50);
    },
    async destroy() {
      await store.stop();
      await script('down.sh', 'mongo');
      rmSync(runDir, { recursive: true, force: true });
    },
  };
  return store;
}
