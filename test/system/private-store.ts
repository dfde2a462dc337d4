import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '@estate/testing';
import { freePort } from './harness';

/**
 * A store engine of the test's own (FerretDB on its own port and run dir, started by scripts/engines/up.sh like
 * the shared one), which a fault test may stop and start again without disturbing anyone else. With the
 * PostgreSQL backend it shares the PostgreSQL server on PG_PORT when one runs there (up.sh starts one in the run
 * dir otherwise).
 */
export interface PrivateStore {
  url: string;
  /** Starts FerretDB (again), after up.sh's readiness check. */
  start(): void;
  /** Stops FerretDB (SIGKILL: connections drop at once, as when a machine goes away) and waits until it is gone. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function privateStore(): Promise<PrivateStore> {
  const port = await freePort();
  const runDir = mkdtempSync(join(tmpdir(), 'estate-fault-store-'));
  const env = { ...process.env, MONGO_PORT: String(port), ENGINES_RUN_DIR: runDir };
  const script = (name: string, ...args: string[]) =>
    execFileSync('bash', [join(REPO_ROOT, 'scripts', 'engines', name), ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
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
    start: () => void script('up.sh', 'mongo'),
    async stop() {
      const p = pid();
      if (p === null || !alive(p)) return;
      process.kill(p, 'SIGKILL');
      while (alive(p)) await sleep(50);
    },
    async destroy() {
      await store.stop();
      script('down.sh', 'mongo');
      rmSync(runDir, { recursive: true, force: true });
    },
  };
  return store;
}
