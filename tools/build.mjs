// Bundles each process entry point into dist/ (dependencies stay external in node_modules).
import { build } from 'esbuild';
import { existsSync } from 'node:fs';

const entries = {
  'apps/embedded/main': 'apps/embedded/src/main.ts',
  'apps/cli/main': 'apps/cli/src/main.ts',
  'services/gateway/main': 'services/gateway/src/main.ts',
  'services/listings/main': 'services/listings/src/main.ts',
  'services/media/main': 'services/media/src/main.ts',
  'services/leads/main': 'services/leads/src/main.ts',
  'services/webhooks/main': 'services/webhooks/src/main.ts',
  'tools/bench/main': 'tools/bench/src/main.ts',
  'tools/api-docs/main': 'tools/api-docs/src/main.ts',
  'tools/seed/main': 'tools/seed/src/main.ts',
};

// Outputs are overwritten in place (no wipe first): processes already running from dist/ keep working.
await build({
  entryPoints: Object.fromEntries(Object.entries(entries).filter(([, src]) => existsSync(src))),
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
