import { parseArgs } from 'node:util';
import type { BenchSettings } from './scenario';

export const USAGE = `Usage: npm run bench -- [scenario...] [options]

Scenarios: all when none is named (--list shows them).

Options:
  --quick              smoke run: 1 s warm-up, 3 s measured (results go to quick.{json,md})
  --duration <s>       measured seconds per target       (env BENCH_DURATION, default 15)
  --warmup <s>         discarded warm-up seconds         (env BENCH_WARMUP, default 10)
  --connections <n>    concurrent connections            (env BENCH_CONNECTIONS, default 50)
  --out <dir>          where results are written         (default bench/results)
  --profile            run each server under node --cpu-prof (env BENCH_PROFILE=1): profiles go to
                       <out>/profiles, the top 10 self-time frames per server into the results
  --list               list scenarios and exit
  -h, --help           this text
`;

/** Bad flags or names: printed without a stack trace. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const FULL = { warmupSec: 10, durationSec: 15, connections: 50 };
const QUICK = { warmupSec: 1, durationSec: 3, connections: 50 };

export type Cli =
  | { command: 'help' }
  | { command: 'list' }
  | { command: 'serve'; kind: string }
  | { command: 'bench'; scenarios: string[]; settings: BenchSettings; outDir: string; profile: boolean };

function int(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer ≥ ${min}, got "${raw}"`);
  return n;
}

const options = {
  quick: { type: 'boolean', default: false },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  connections: { type: 'string' },
  out: { type: 'string', default: 'bench/results' },
  list: { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  serve: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** Flags win over environment variables, which win over the mode's defaults. */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv): Cli {
  const { values, positionals } = parseFlags(argv);
  if (values.serve !== undefined) return { command: 'serve', kind: values.serve };
  if (values.help) return { command: 'help' };
  if (values.list) return { command: 'list' };
  const defaults = values.quick ? QUICK : FULL;
  return {
    command: 'bench',
    scenarios: positionals,
    outDir: values.out,
    profile: values.profile || env.BENCH_PROFILE === '1',
    settings: {
      mode: values.quick ? 'quick' : 'full',
      durationSec: int('--duration', values.duration ?? env.BENCH_DURATION, defaults.durationSec, 1),
      warmupSec: int('--warmup', values.warmup ?? env.BENCH_WARMUP, defaults.warmupSec, 0),
      connections: int('--connections', values.connections ?? env.BENCH_CONNECTIONS, defaults.connections, 1),
    },
  };
}
