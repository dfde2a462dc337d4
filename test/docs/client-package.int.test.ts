import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformSync } from 'esbuild';
import pino from 'pino';
import { composeEmbedded, loadConfig, type EmbeddedProduct } from '@estate/embedded';
import { REPO_ROOT } from '@estate/testing';
import { extractSnippets, fillPlaceholders } from './snippets';

/**
 * @estate/client as a user gets it: `npm pack` of the built package, installed into an empty project outside the
 * repository with npm itself, offline. Its runtime dependencies are packed from this repository's node_modules
 * (what `npm ci` installed), so neither the registry nor the npm cache is asked (decision 0086). The README
 * example is then type-checked against the shipped declarations and run against the product.
 */
const CLIENT = join(REPO_ROOT, 'clients', 'typescript');
const ADMIN = 'ek_client_package_admin_0123456789abcdef';

/** The package and every package it needs at run time, as installed in the repository. */
function runtimeClosure(name: string, seen = new Set<string>()): Set<string> {
  const manifest = JSON.parse(
    readFileSync(
      join(name === '@estate/client' ? CLIENT : join(REPO_ROOT, 'node_modules', name), 'package.json'),
      'utf8',
    ),
  ) as { dependencies?: Record<string, string> };
  for (const dependency of Object.keys(manifest.dependencies ?? {}))
    if (!seen.has(dependency)) {
      seen.add(dependency);
      runtimeClosure(dependency, seen);
    }
  return seen;
}

/** Runs a process without blocking this one (the product answers from this process). */
async function run(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ status: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { ...options, encoding: 'utf8', timeout: 60_000 });
    return { status: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { status: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const npm = (args: string[], cwd: string) =>
  execFileSync('npm', args, {
    cwd,
    encoding: 'utf8',
    // An unreachable registry: anything npm would fetch fails the test instead of going out.
    env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_offline: 'true' },
  });

describe('@estate/client installed from its tarball outside the repository', () => {
  let dir: string;
  let app: string;
  let product: EmbeddedProduct;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'client-package-'));
    const tarballs = join(dir, 'tarballs');
    mkdirSync(tarballs);
    execFileSync(process.execPath, [join(CLIENT, 'build.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' });
    npm(['pack', CLIENT, '--pack-destination', tarballs, '--silent'], REPO_ROOT);
    for (const dependency of runtimeClosure('@estate/client'))
      npm(
        [
          'pack',
          join(REPO_ROOT, 'node_modules', dependency),
          '--pack-destination',
          tarballs,
          '--silent',
          '--ignore-scripts',
        ],
        REPO_ROOT,
      );

    app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'integration', version: '1.0.0', private: true }));
    const files = readdirSync(tarballs).map((f) => join(tarballs, f));
    npm(['install', '--no-audit', '--no-fund', '--ignore-scripts', ...files], app);

    const data = join(dir, 'data');
    product = await composeEmbedded(
      { ...loadConfig({ DATA_DIR: data, ADMIN_API_KEY: ADMIN, LOG_LEVEL: 'silent' }), port: 0 },
      pino({ level: 'silent' }),
    );
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    port = (product.app.server.address() as AddressInfo).port;
  }, 120_000);
  afterAll(async () => {
    await product?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships JavaScript and declarations only, no TypeScript source', () => {
    const files = readdirSync(join(app, 'node_modules', '@estate', 'client', 'dist'));
    expect(files.sort()).toEqual(['index.cjs', 'index.d.ts', 'index.mjs', 'schema.d.ts']);
  });

  it('loads as ESM and as CommonJS, and its errors carry status, code and requestId', async () => {
    const script = (load: string) => `${load}
      const api = createEstateClient({ baseUrl: 'http://127.0.0.1:${port}', apiKey: '${ADMIN}' });
      api.GET('/v1/listings/{id}', { params: { path: { id: 'lst_nope' } } }).then(
        (result) => unwrap(result),
      ).catch((err) => {
        console.log(JSON.stringify({ error: err instanceof EstateApiError, status: err.status, code: err.code, requestId: err.requestId }));
      });`;
    const esm = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        script("import { createEstateClient, unwrap, EstateApiError } from '@estate/client';"),
      ],
      { cwd: app },
    );
    const cjs = await run(
      process.execPath,
      ['-e', script("const { createEstateClient, unwrap, EstateApiError } = require('@estate/client');")],
      { cwd: app },
    );
    for (const loaded of [esm, cjs]) {
      expect(loaded.stderr).toBe('');
      const answer = JSON.parse(loaded.stdout);
      expect(answer).toMatchObject({ error: true, status: 404, code: 'listing_not_found' });
      expect(answer.requestId).toMatch(/^[0-9a-f-]{36}$/);
    }
  }, 30_000);

  it('type-checks the README example against the shipped declarations and runs it against the product', async () => {
    const [snippet] = extractSnippets(join(CLIENT, 'README.md')).filter((s) => s.language === 'typescript');
    const source = fillPlaceholders(snippet.code, new Map(), new Map(), port);
    writeFileSync(join(app, 'example.ts'), source);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'CommonJS',
          moduleResolution: 'Node10',
          strict: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [join(REPO_ROOT, 'node_modules', '@types')],
        },
        files: ['example.ts'],
      }),
    );
    const tsc = await run(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
      cwd: app,
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);

    writeFileSync(join(app, 'example.js'), transformSync(source, { loader: 'ts', format: 'cjs' }).code);
    const example = await run(process.execPath, ['example.js'], {
      cwd: app,
      env: { PATH: process.env.PATH, ESTATE_API_KEY: ADMIN },
    });
    if (example.status !== 0)
      throw new Error(`the example exited ${example.status}\n${example.stdout}\n${example.stderr}`);
    expect(example.stdout).toMatch(/^lst_\S+ pending$/m);
    expect(example.stdout).toMatch(/^succeeded /m);
    expect(example.stdout).toMatch(/^lead_\S+ new \d+ /m);
    expect(example.stdout).toMatch(/^404 listing_not_found [0-9a-f-]{36}$/m);
  }, 60_000);
});
