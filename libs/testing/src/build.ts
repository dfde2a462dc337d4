import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const REPO_ROOT = join(__dirname, '..', '..', '..');

/** Builds the process bundles in dist/ (esbuild: about a second), unless the Jest global setup did. */
export function buildDist(): void {
  if (process.env.ESTATE_DIST_BUILT === '1') return;
  execFileSync(process.execPath, [join(REPO_ROOT, 'tools', 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
}
