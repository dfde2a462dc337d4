import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist, eventually, fixedPort, REPO_ROOT } from '@estate/testing';

/**
 * `npm start` runs its script with `sh -c` and passes a SIGTERM it receives (a process manager stopping it) to that
 * shell. The script must hand the shell over to the product (`exec`), or the signal stops the shell and leaves the
 * product running without anyone to stop it.
 */
describe('the npm start script', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'estate-start-script-'));
  beforeAll(() => buildDist());
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('every start script hands its shell over to the process it runs (exec), as the distributed one must too', () => {
    // The product's own start script is run under SIGTERM below, and start:distributed in the system tests; the
    // per-service scripts (one per host, under a process manager) follow the same rule.
    const { scripts } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const starts = Object.entries(scripts).filter(([name]) => name === 'start' || name.startsWith('start:'));
    expect(starts.length).toBeGreaterThan(5);
    for (const [name, script] of starts) {
      // The last command, after any build step and environment assignments, is an exec.
      const last = script.split('&&').pop()!.trim();
      expect({ name, hands: /^(?:[A-Z_]+=\S+\s+)*exec\s/.test(last) }).toEqual({ name, hands: true });
    }
  });

  it('stops the product, cleanly, when the shell running it gets SIGTERM', async () => {
    const script = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start;
    // What npm runs after the build, as npm runs it.
    const run = script.replace(/^npm run build --silent && /, '');
    expect(run).not.toBe(script);
    const port = await fixedPort();
    let output = '';
    const shell = spawn('sh', ['-c', run], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        DATA_DIR: dataDir,
        PORT: String(port),
        ADMIN_API_KEY: 'ek_test_admin_key_0123456789abcdefghijkl',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    shell.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    shell.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => shell.once('exit', (code) => resolve(code)));
    try {
      await eventually(
        async () => {
          if (shell.exitCode !== null) throw new Error(`the product exited: ${output.slice(-2000)}`);
          expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      shell.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(output).toContain('"msg":"stopped"');
      // Nothing is left answering on the port.
      await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    } finally {
      if (shell.exitCode === null) shell.kill('SIGKILL');
    }
  });
});
