import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { Webhook } from 'standardwebhooks';
import { eventually, fixedPort, REPO_ROOT } from '@estate/testing';
import {
  extractSnippets,
  fillPlaceholders,
  latestIds,
  matchIds,
  missingKeys,
  shellSteps,
  SKIP_TAG,
  type Snippet,
} from './snippets';

/**
 * The integrator's documents, run as written against the product: every shell and TypeScript block of these
 * files runs here, in order, each document on a product of its own. Ids a document shows are replaced by the
 * ones the product answered earlier (`lst_…` too), `127.0.0.1:3000` by the port under test, `npm` and `curl`
 * by thin wrappers (test/docs/shims: `npm start` in the background on the built bundles; curl reporting each
 * status). A command fails the test when it exits non-zero, when an answer is 4xx/5xx where the document shows
 * none (or not the one it shows), or when a documented JSON answer has a field the real one lacks.
 */
const DOCUMENTS = [
  'README.md',
  'docs/api-guide.md',
  'docs/webhooks.md',
  'docs/feeds.md',
  'clients/typescript/README.md',
];

/** Blocks tagged `skip-test`, by their first line: each is listed here with the reason, or the test fails. */
const SKIPPED_BY_DESIGN: Record<string, string> = {
  'README.md: npm ci && npm start     # install, then run the product on http://127.0.0.1:3000 (embedded profile)':
    'the quickstart block below installs and starts the product, and runs here; `npm test` runs this very test',
  'README.md: eval "$(scripts/engines/up.sh)"   # prints export lines for MONGODB_URL, NATS_URL, ELASTICSEARCH_URL':
    'installs and starts database engines and runs every test tier',
  'docs/webhooks.md: npm run cli -- webhooks listen --forward-to http://127.0.0.1:4000/hook':
    'runs until Ctrl-C; apps/cli/test/webhooks-listen.int.test.ts runs it and verifies what it forwards',
  'README.md: eval "$(scripts/engines/up.sh)"':
    'installs and starts database engines, then the five processes of the distributed profile; test/system/start-distributed.system.test.ts runs the script',
  'README.md: STRESS_RUNS=3 REQUIRE_ENGINES=1 npm run test:stress -- npx jest test/system/webhooks.system.test.ts':
    'runs a test suite three times under a CPU hog on every core: a stress run of the tests, not a test',
  'README.md: npm run bench              # full run; results in bench/results/latest.{json,md}':
    'benchmarks measure timings for minutes; tests never do',
};

const ADMIN = 'ek_docs_test_admin_key_0123456789abcdef';

interface StepResult {
  status: number | null;
  stdout: string;
  stderr: string;
  http: { status: number; method: string; url: string }[];
}

/** One document's run: its folder, its product, the ids it has seen, the shell state its commands share. */
class DocumentRun {
  readonly dir = mkdtempSync(join(tmpdir(), 'doc-snippets-'));
  readonly ids = new Map<string, string>();
  readonly latest = new Map<string, string>();
  private readonly state = join(this.dir, '.shell-state');
  private readonly pids = join(this.dir, '.pids');
  private readonly background: ChildProcess[] = [];

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {
    mkdirSync(join(this.dir, 'work'));
  }

  get cwd(): string {
    return join(this.dir, 'work');
  }

  private processEnv(): NodeJS.ProcessEnv {
    return {
      PATH: `${join(__dirname, 'shims')}:${process.env.PATH}`,
      HOME: process.env.HOME,
      LANG: 'C.UTF-8',
      PORT: String(this.port),
      LOG_LEVEL: 'warn',
      LOG_PRETTY: '0',
      DOCTEST_REPO: REPO_ROOT,
      DOCTEST_PIDS: this.pids,
      DOCTEST_SERVER_LOG: join(this.dir, 'server.log'),
      ...this.env,
    };
  }

  /** Runs one shell command with the variables earlier commands exported; `sleep` ends a polling loop. */
  shell(command: string, timeoutMs = 60_000): StepResult {
    const script = [
      'set -a',
      `[ -f ${this.state} ] && . ${this.state}`,
      // A polling loop waits only once it is up to date: that is where the test ends it.
      `sleep() { echo "[docs-test] up to date: the loop would wait $* s here" >&2; export -p > ${this.state}; exit 0; }`,
      command,
      '__doctest_status=$?',
      `export -p > ${this.state}`,
      'exit $__doctest_status',
    ].join('\n');
    const run = spawnSync('bash', ['-c', script], {
      cwd: this.cwd,
      env: this.processEnv(),
      encoding: 'utf8',
      timeout: timeoutMs,
    });
    const http = [...run.stderr.matchAll(/^\[docs-test\] HTTP (\d{3}) (\S+) (\S+)$/gm)].map((m) => ({
      status: Number(m[1]),
      method: m[2],
      url: m[3],
    }));
    return { status: run.status, stdout: run.stdout, stderr: run.stderr, http };
  }

  /** Starts a long-running snippet (a receiver) and keeps it until the run ends. */
  spawn(command: string, args: string[], env: Record<string, string> = {}): ChildProcess {
    const child = spawn(command, args, { cwd: this.cwd, env: { ...this.processEnv(), ...env }, stdio: 'pipe' });
    this.background.push(child);
    return child;
  }

  learn(documented: string, actual: string): void {
    for (const [doc, real] of matchIds(documented, actual)) this.ids.set(doc, real);
    latestIds(actual, this.latest);
  }

  fill(code: string): string {
    return fillPlaceholders(code, this.ids, this.latest, this.port);
  }

  /** Stops what the document started (the products it ran in the background) and removes its folder once they exit. */
  async close(): Promise<void> {
    for (const child of this.background) child.kill();
    const groups = existsSync(this.pids) ? readFileSync(this.pids, 'utf8').split('\n').filter(Boolean).map(Number) : [];
    const alive = (group: number): boolean => {
      try {
        process.kill(-group, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const group of groups.filter(alive)) process.kill(-group, 'SIGTERM');
    // A product finishes what it is writing before it exits (renditions among it): its files are removed after.
    await eventually(
      () => {
        if (groups.some(alive)) throw new Error(`still running: ${groups.filter(alive).join(', ')}`);
      },
      { timeoutMs: 60_000 },
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The photos the documents upload, from the repository's `docs/examples`, where the commands name them. */
function photos(dir: string): void {
  mkdirSync(join(dir, 'docs', 'examples'), { recursive: true });
  for (const name of ['front.jpg', 'garden.jpg'])
    copyFileSync(join(REPO_ROOT, 'docs', 'examples', name), join(dir, 'docs', 'examples', name));
}

const label = (s: Snippet) => `${relative(REPO_ROOT, s.file)}: ${s.code.split('\n')[0]}`;
const documented = (file: string) => extractSnippets(join(REPO_ROOT, file));

/** The HTTP error status the documented answer shows (a problem), if it shows one. */
function documentedError(answer: string): number | undefined {
  const status = /"status":\s?(\d{3})/.exec(answer) ?? /^HTTP\/[\d.]+ (\d{3})/m.exec(answer);
  return status && Number(status[1]) >= 400 ? Number(status[1]) : undefined;
}

/** A documented answer that is whole JSON (not one shortened with `…` outside strings), parsed. */
function parsedJson(answer: string | undefined): unknown {
  try {
    return answer ? JSON.parse(answer) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs every command of a shell snippet, checking each as the describe block above says. */
function runShellSnippet(run: DocumentRun, snippet: Snippet): StepResult[] {
  const steps = shellSteps(snippet.code);
  return steps.map((step, i) => {
    const answer = [step.answer, i === steps.length - 1 ? (snippet.answer ?? '') : ''].join('\n');
    const result = run.shell(run.fill(step.command));
    const context = `${label(snippet)}\n$ ${step.command}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
    if (result.status !== 0) throw new Error(`exited ${result.status}: ${context}`);
    const expected = documentedError(answer);
    const failed = result.http.filter((h) => h.status >= 400);
    if (expected) {
      if (!result.http.some((h) => h.status === expected)) throw new Error(`expected ${expected}: ${context}`);
    } else if (failed.length > 0) throw new Error(`answered ${failed.map((h) => h.status)}: ${context}`);
    const shown = i === steps.length - 1 ? parsedJson(snippet.answer) : undefined;
    if (shown !== undefined) {
      const missing = missingKeys(shown, JSON.parse(result.stdout));
      if (missing.length > 0) throw new Error(`the answer lacks ${missing.join(', ')}: ${context}`);
    }
    run.learn(answer, result.stdout);
    return result;
  });
}

/** Type-checks the TypeScript snippets under the repository's compiler options (not run here). */
function typecheck(files: string[]): string {
  const dir = join(REPO_ROOT, 'tmp', 'doc-snippets');
  const config = join(dir, `tsconfig.${process.pid}.json`);
  writeFileSync(
    config,
    JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true }, files }),
  );
  const tsc = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', config], {
    encoding: 'utf8',
  });
  rmSync(config);
  return tsc.status === 0 ? '' : tsc.stdout + tsc.stderr;
}

/** Writes a TypeScript snippet beside the repository (so `@estate/*` resolve as in the repo) and bundles it. */
async function bundle(run: DocumentRun, snippet: Snippet): Promise<{ source: string; bundled: string }> {
  const dir = join(REPO_ROOT, 'tmp', 'doc-snippets');
  mkdirSync(dir, { recursive: true });
  const name = `${relative(REPO_ROOT, snippet.file).replace(/[^a-z0-9]+/gi, '-')}-${snippet.line}-${process.pid}`;
  const source = join(dir, `${name}.ts`);
  writeFileSync(source, run.fill(snippet.code));
  const bundled = join(dir, `${name}.js`);
  await build({
    entryPoints: [source],
    outfile: bundled,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    packages: 'external',
    nodePaths: [join(REPO_ROOT, 'node_modules')],
    logLevel: 'silent',
  });
  return { source, bundled };
}

function runNode(run: DocumentRun, file: string, env: Record<string, string>): StepResult {
  const result = spawnSync(process.execPath, [file], {
    cwd: run.cwd,
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, http: [] };
}

describe('the documents run as written', () => {
  it('lists every snippet tagged skip-test, with its reason, and nothing else', () => {
    const tagged = DOCUMENTS.flatMap(documented)
      .filter((s) => s.tags.includes(SKIP_TAG))
      .map(label);
    expect(tagged.sort()).toEqual(Object.keys(SKIPPED_BY_DESIGN).sort());
    for (const [snippet, reason] of Object.entries(SKIPPED_BY_DESIGN))
      process.stdout.write(`skipped by design: ${snippet}\n  because ${reason}\n`);
  });

  it('finds the snippets of every document (no document silently empty)', () => {
    const counts = Object.fromEntries(DOCUMENTS.map((d) => [d, documented(d).length]));
    for (const d of DOCUMENTS) expect(counts[d]).toBeGreaterThan(0);
  });

  it('type-checks every TypeScript snippet under the repository tsconfig', () => {
    const dir = join(REPO_ROOT, 'tmp', 'doc-snippets');
    mkdirSync(dir, { recursive: true });
    const files = DOCUMENTS.flatMap(documented)
      .filter((s) => s.language === 'typescript' && !s.tags.includes(SKIP_TAG))
      .map((s) => {
        const file = join(dir, `check-${relative(REPO_ROOT, s.file).replace(/[^a-z0-9]+/gi, '-')}-${s.line}.ts`);
        writeFileSync(file, s.code);
        return file;
      });
    expect(files.length).toBeGreaterThan(0);
    expect(typecheck(files)).toBe('');
  }, 120_000);
});

describe('README.md', () => {
  let run: DocumentRun;
  beforeAll(async () => {
    run = new DocumentRun(await fixedPort(), {});
    photos(run.cwd);
  });
  afterAll(() => run.close());

  const snippets = documented('README.md').filter((s) => !s.tags.includes(SKIP_TAG));
  it.each(snippets.map((s) => [label(s), s] as const))(
    '%s',
    (_, snippet) => {
      runShellSnippet(run, snippet);
    },
    120_000,
  );
});

/** A document run on a product the test starts (these documents start from a running one). */
function withProduct(file: string, tests: (get: () => DocumentRun) => void) {
  describe(file, () => {
    let run: DocumentRun;
    beforeAll(async () => {
      run = new DocumentRun(await fixedPort(), {
        ADMIN_API_KEY: ADMIN,
        // The keys the documents name: an admin key serves for every one of them.
        ESTATE_API_KEY: ADMIN,
      });
      photos(run.cwd);
      const started = run.shell('npm start');
      if (started.status !== 0) throw new Error(`npm start failed: ${started.stderr}`);
    });
    afterAll(() => run.close());
    tests(() => run);
  });
}

withProduct('docs/api-guide.md', (run) => {
  const snippets = documented('docs/api-guide.md').filter((s) => s.language === 'shell');
  it.each(snippets.map((s) => [label(s), s] as const))('%s', (_, snippet) => {
    runShellSnippet(run(), snippet);
  });
});

// The walkthrough starts a second product (instance B, port 3401) beside the one the test starts (instance A).
withProduct('docs/feeds.md', (run) => {
  const snippets = documented('docs/feeds.md').filter((s) => s.language === 'shell');
  it.each(snippets.map((s) => [label(s), s] as const))('%s', (_, snippet) => {
    runShellSnippet(run(), snippet);
  });
  it('left instance B with the listing of A at its changed price, written twice and no more', async () => {
    const res = await fetch('http://127.0.0.1:3401/v1/listings?source=instance-a', {
      headers: { authorization: 'Bearer ek_feeds_walkthrough_b_admin_key_0123456789' },
    });
    const { items } = (await res.json()) as { items: Array<{ pricing: { listPrice: number }; version: number }> };
    expect(items).toEqual([
      expect.objectContaining({ pricing: expect.objectContaining({ listPrice: 439000 }), version: 2 }),
    ]);
  });
});

withProduct('docs/webhooks.md', (run) => {
  const [poll, register] = documented('docs/webhooks.md').filter((s) => s.language === 'shell');
  const [receiver] = documented('docs/webhooks.md').filter((s) => s.language === 'typescript');

  it('polls the change feed from an empty cursor to the end, and stops at an error', async () => {
    const created = await fetch(`http://127.0.0.1:${run().port}/v1/listings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        externalId: 'FEED-1',
        source: 'docs',
        pricing: { listPrice: 100000 },
        propertyDetails: { propertyType: 'land' },
        location: { address: { street: '1 A St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701' } },
      }),
    });
    expect(created.status).toBe(201);
    // Events become visible about a second after they happen: poll as written until the listing is there.
    const polled = await eventually(
      () => {
        const result = runShellSnippet(run(), poll).at(-1)!;
        expect(result.stdout).toContain('"type":"listing.created"');
        return result;
      },
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    expect(polled.stderr).toContain('[docs-test] up to date');
    expect(polled.http.every((h) => h.status === 200)).toBe(true);

    // A wrong key: one request, then the loop ends (it never reaches its sleep).
    // In a subshell: the later steps keep the right key.
    const refused = run().shell(`(\nADMIN_API_KEY=ek_wrong_key_0123456789abcdef\n${run().fill(poll.code)}\n)`);
    expect(refused.http.map((h) => h.status)).toEqual([401]);
    expect(refused.stderr).not.toContain('up to date');
    expect(refused.stderr).toMatch(/error: 401/);
  }, 60_000);

  it('registers an endpoint as written', () => {
    runShellSnippet(run(), register);
  });

  it('verifies a delivery with the receiver as written', async () => {
    const { bundled } = await bundle(run(), receiver);
    const secret = 'whsec_' + Buffer.from('docs-test-secret-0123456789abcdef').toString('base64');
    const port = await fixedPort();
    const child = run().spawn(process.execPath, [bundled], { ESTATE_WEBHOOK_SECRET: secret, PORT: String(port) });
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    const body = JSON.stringify({ id: 'evt_docs_1', type: 'webhook.test', createdAt: new Date().toISOString() });
    const headers = (signWith: string) => {
      const timestamp = new Date();
      return {
        'content-type': 'application/json',
        'webhook-id': 'evt_docs_1',
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': new Webhook(signWith).sign('evt_docs_1', timestamp, body),
      };
    };
    const post = (signWith: string) =>
      fetch(`http://127.0.0.1:${port}/hooks/estate`, { method: 'POST', headers: headers(signWith), body });
    const good = await eventually(() => post(secret), { timeoutMs: 15_000, intervalMs: 200 });
    expect(good.status).toBe(204);
    const forged = await post('whsec_' + Buffer.from('another-secret-0123456789abcdefgh').toString('base64'));
    expect(forged.status).toBe(400);
    expect(output).toContain('evt_docs_1');
  }, 60_000);
});

withProduct('clients/typescript/README.md', (run) => {
  const [example] = documented('clients/typescript/README.md').filter((s) => s.language === 'typescript');

  it('runs the README example against the product', async () => {
    const { bundled } = await bundle(run(), example);
    const result = runNode(run(), bundled, { ESTATE_API_KEY: ADMIN });
    if (result.status !== 0) throw new Error(`exited ${result.status}\n${result.stdout}\n${result.stderr}`);
    // The example prints the listings it lists and the job's progress to its final state.
    expect(result.stdout).toMatch(/^lst_\S+ pending$/m);
    expect(result.stdout).toMatch(/^succeeded /m);
    expect(result.stdout).toMatch(/^lead_\S+ new \d+ /m);
    expect(result.stdout).toMatch(/^404 listing_not_found [0-9a-f-]{36}$/m);
  }, 60_000);
});
