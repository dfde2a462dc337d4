import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { loadGeneratorVersion } from './lib/load';
import { summariseProfile } from './lib/profile';
import { isTargetKind } from './lib/protocol';
import { machineInfo, toMarkdown, writeReport, type BenchReport } from './lib/report';
import type { BenchSettings, Scenario, ScenarioContext, ScenarioResult } from './lib/scenario';
import { serveChild } from './lib/serve';
import { ServerPool } from './lib/servers';
import { parseCli, USAGE, UsageError } from './lib/settings';
import { scenarios } from './scenarios';

const log = (message: string): void => {
  process.stderr.write(`[bench] ${message}\n`);
};

function pickScenarios(names: string[]): Scenario[] {
  if (names.length === 0) return [...scenarios];
  return names.map((name) => {
    const found = scenarios.find((s) => s.name === name);
    if (!found) throw new UsageError(`unknown scenario "${name}"; known: ${scenarios.map((s) => s.name).join(', ')}`);
    return found;
  });
}

/** Each stopped server's profile, summarised into the scenario's result and printed. */
async function attachProfiles(result: ScenarioResult, files: Array<{ server: string; file: string }>): Promise<void> {
  result.profiles = [];
  for (const { server, file } of files) {
    try {
      const summary = await summariseProfile(server, file);
      result.profiles.push(summary);
      log(
        `${result.name} ${server}: ${summary.totalMs} ms profiled, ${summary.idleMs} ms idle (${summary.file}); self time, % of busy:`,
      );
      for (const f of summary.top) log(`  ${f.selfPct.toFixed(1).padStart(5)} %  ${f.frame}`);
    } catch (err) {
      log(
        `${result.name} ${server}: no profile read from ${file}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
}

async function runBench(
  selected: Scenario[],
  settings: BenchSettings,
  outDir: string,
  profile: boolean,
): Promise<number> {
  const loadBefore = os.loadavg()[0];
  const profileDir = profile ? join(resolve(outDir), 'profiles') : undefined;
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const pool = new ServerPool(process.argv[1], (line) => process.stderr.write(`${line}\n`), profileDir);
  const tempDirs: string[] = [];
  const cleanup = async (): Promise<void> => {
    await pool.stopAll();
    await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  };
  // Ctrl-C mid-run: children and temp dirs must still go.
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping servers`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const ctx: ScenarioContext = {
    settings,
    servers: pool,
    log,
    async tempDir(label) {
      const dir = await mkdtemp(join(os.tmpdir(), `estate-bench-${label}-`));
      tempDirs.push(dir);
      return dir;
    },
  };

  const results: ScenarioResult[] = [];
  try {
    for (const scenario of selected) {
      log(`scenario ${scenario.name}`);
      try {
        results.push(await scenario.run(ctx));
      } catch (err) {
        // One scenario that cannot run must not cost the figures of the others.
        const message = err instanceof Error ? err.message : String(err);
        log(`scenario ${scenario.name} failed: ${message}`);
        results.push({
          name: scenario.name,
          description: scenario.description,
          targets: [],
          ratios: [],
          problems: [`${scenario.name}: did not run to its end: ${message}`],
        });
      }
      await pool.stopAll();
      if (profileDir) await attachProfiles(results[results.length - 1], pool.takeProfiles());
    }
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const report: BenchReport = {
    schemaVersion: 1,
    date: new Date().toISOString(),
    mode: settings.mode,
    machine: machineInfo(loadBefore),
    settings: { ...settings, pipelining: 1, loadGenerator: loadGeneratorVersion(), host: '127.0.0.1' },
    scenarios: results,
    problems: results.flatMap((r) => r.problems),
  };
  // A smoke run must not overwrite the reference figures.
  const files = await writeReport(report, resolve(outDir), settings.mode === 'quick' ? 'quick' : 'latest');
  process.stdout.write(`\n${toMarkdown(report)}\n`);
  log(`wrote ${files.json} and ${files.md}`);
  if (report.problems.length > 0) {
    log(`INVALID RUN: ${report.problems.length} problem(s); figures are suspect`);
    return 1;
  }
  return 0;
}

async function main(): Promise<void> {
  const cli = parseCli(process.argv.slice(2), process.env);
  switch (cli.command) {
    case 'serve':
      if (!isTargetKind(cli.kind)) throw new UsageError(`--serve expects embedded or bare, got "${cli.kind}"`);
      serveChild(cli.kind);
      return;
    case 'help':
      process.stdout.write(USAGE);
      return;
    case 'list':
      for (const s of scenarios) process.stdout.write(`${s.name}\t${s.description}\n`);
      return;
    case 'bench':
      process.exitCode = await runBench(pickScenarios(cli.scenarios), cli.settings, cli.outDir, cli.profile);
      return;
  }
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
