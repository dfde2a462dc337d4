import { mkdir, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { BenchSettings, ScenarioResult } from './scenario';

export interface MachineInfo {
  node: string;
  platform: string;
  cpuModel: string;
  cpuCount: number;
  memoryGb: number;
  /** 1-minute load average before and after: other work on the machine skews the figures. */
  loadAverage1m: { before: number; after: number };
}

export interface BenchReport {
  schemaVersion: 1;
  date: string;
  mode: BenchSettings['mode'];
  machine: MachineInfo;
  settings: BenchSettings & { pipelining: 1; loadGenerator: string; host: '127.0.0.1' };
  scenarios: ScenarioResult[];
  /** Everything that makes a figure suspect; the run is invalid unless this is empty. */
  problems: string[];
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

export function machineInfo(loadBefore: number): MachineInfo {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCount: cpus.length,
    memoryGb: round2(os.totalmem() / 1024 ** 3),
    loadAverage1m: { before: round2(loadBefore), after: round2(os.loadavg()[0]) },
  };
}

const fmt = (n: number, digits = 2): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function row(cells: Array<string | number>): string {
  return `| ${cells.join(' | ')} |`;
}

function scenarioMarkdown(s: ScenarioResult): string[] {
  const lines = [
    `## ${s.name}`,
    '',
    s.description,
    '',
    row([
      'target',
      'req/s mean (± sd)',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'max ms',
      'errors',
      'non-2xx',
      'server CPU',
      'loadgen CPU',
      'server RSS MB',
      'event-loop p99 ms',
    ]),
    row(Array.from({ length: 12 }, (_, i) => (i === 0 ? '---' : '---:'))),
  ];
  for (const t of s.targets) {
    const m = t.measured;
    lines.push(
      row([
        `**${t.name}**`,
        `${fmt(m.rps.mean, 0)} (± ${fmt(m.rps.stddev, 0)})`,
        fmt(m.latencyMs.p50),
        fmt(m.latencyMs.p90),
        fmt(m.latencyMs.p99),
        fmt(m.latencyMs.max),
        m.errors + m.timeouts,
        m.non2xx,
        `${fmt(t.server.cpuPct, 0)} %`,
        `${fmt(m.loadgenCpuPct, 0)} %`,
        `${fmt(t.server.rssMbBefore, 0)} → ${fmt(t.server.rssMbAfter, 0)}`,
        fmt(t.server.eventLoopDelayMs.p99, 1),
      ]),
    );
  }
  lines.push('', row(['ratio', 'value', 'goal', 'verdict']), row(['---', '---:', '---', '---']));
  for (const r of s.ratios) {
    const goal = r.goal
      ? [r.goal.min !== undefined ? `≥ ${r.goal.min}` : '', r.goal.max !== undefined ? `≤ ${r.goal.max}` : '']
          .filter(Boolean)
          .join(', ')
      : '—';
    lines.push(row([r.name, fmt(r.value), goal, r.verdict ? `**${r.verdict}**` : '—']));
  }
  lines.push('');
  for (const p of s.profiles ?? []) {
    lines.push(
      `CPU profile of **${p.server}** (whole life: start-up, warm-up, measured run, and idle while the other target ran; ${fmt(p.totalMs / 1000, 1)} s of which ${fmt(p.idleMs / 1000, 1)} s idle; \`${p.file}\`), top self time as a share of the busy time:`,
      '',
      row(['self %', 'self ms', 'frame']),
      row(['---:', '---:', '---']),
      ...p.top.map((f) => row([fmt(f.selfPct, 1), fmt(f.selfMs, 0), `\`${f.frame}\``])),
      '',
    );
  }
  return lines;
}

export function toMarkdown(report: BenchReport): string {
  const { machine: m, settings: st } = report;
  const lines = [
    `# Bench results (${report.mode})`,
    '',
    `${report.date} · Node ${m.node} · ${m.cpuModel} × ${m.cpuCount} · ${m.platform} · load average ${m.loadAverage1m.before} → ${m.loadAverage1m.after}`,
    '',
    `${st.warmupSec} s warm-up (discarded) + ${st.durationSec} s measured per target · ${st.connections} connections · pipelining ${st.pipelining} · ${st.loadGenerator} in the parent process, each server in its own child process`,
    '',
    ...report.scenarios.flatMap(scenarioMarkdown),
    report.problems.length === 0
      ? 'Problems: none (no errors, timeouts or non-2xx answers).'
      : ['**Problems (figures suspect):**', '', ...report.problems.map((p) => `- ${p}`)].join('\n'),
    '',
  ];
  return lines.join('\n');
}

/** Writes `<name>.json` and `<name>.md` (each via a temporary file, so a crash leaves the old ones whole). */
export async function writeReport(
  report: BenchReport,
  dir: string,
  name: string,
): Promise<{ json: string; md: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, `${name}.json`);
  const md = join(dir, `${name}.md`);
  for (const [file, content] of [
    [json, `${JSON.stringify(report, null, 2)}\n`],
    [md, toMarkdown(report)],
  ] as const) {
    await writeFile(`${file}.tmp`, content);
    await rename(`${file}.tmp`, file);
  }
  return { json, md };
}
