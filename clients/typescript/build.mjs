// Builds @estate/client for users outside this repository: ESM (dist/index.mjs) and CommonJS (dist/index.cjs)
// by esbuild, with its dependencies left to the installing project, and type declarations by tsc.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
rmSync(join(here, 'dist'), { recursive: true, force: true });
for (const [format, extension] of [
  ['esm', 'mjs'],
  ['cjs', 'cjs'],
])
  await build({
    entryPoints: [join(here, 'src', 'index.ts')],
    outfile: join(here, 'dist', `index.${extension}`),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format,
    packages: 'external',
    logLevel: 'warning',
  });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.build.json')], { stdio: 'inherit' });
