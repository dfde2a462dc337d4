// Writes the API documents the product serves (/openapi.json, /asyncapi.json) to files, and regenerates the
// typed client's schema from the OpenAPI one: `npm run client:generate`. The product is composed on a
// throwaway data folder and asked in-process, so the files are exactly what a running server answers.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { composeEmbedded } from '@estate/embedded';
import pino from 'pino';

async function main(): Promise<void> {
  const outDir = resolve(process.argv[2] ?? join(tmpdir(), 'estate-api-docs'));
  const clientSchema = process.argv[3] ? resolve(process.argv[3]) : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'estate-api-docs-'));
  const product = await composeEmbedded(
    { port: 0, host: '127.0.0.1', dataDir, rateLimitPerMinute: 1000, logLevel: 'silent' },
    pino({ level: 'silent' }),
  );
  try {
    for (const name of ['openapi.json', 'asyncapi.json']) {
      const res = await product.app.inject({ url: `/${name}` });
      if (res.statusCode !== 200) throw new Error(`/${name} answered ${res.statusCode}`);
      writeFileSync(join(outDir, name), `${JSON.stringify(res.json(), null, 2)}\n`);
    }
  } finally {
    await product.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (clientSchema) {
    const cli = join(process.cwd(), 'node_modules/openapi-typescript/bin/cli.js');
    execFileSync(process.execPath, [cli, join(outDir, 'openapi.json'), '-o', clientSchema], { stdio: 'inherit' });
  }
  process.stdout.write(`wrote ${outDir}/openapi.json and asyncapi.json\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
