import type { LoadResult } from './load';
import type { ServerProfile } from './profile';
import type { ServerPool } from './servers';

export interface BenchSettings {
  mode: 'full' | 'quick';
  /** Seconds of load before measuring, discarded (JIT, caches, connection setup). */
  warmupSec: number;
  durationSec: number;
  connections: number;
}

export interface ScenarioContext {
  readonly settings: BenchSettings;
  readonly servers: ServerPool;
  /** A fresh temporary directory, removed when the bench ends. */
  tempDir(label: string): Promise<string>;
  log(message: string): void;
}

export interface ServerUsage {
  /** CPU of the server process during the measured run, % of one core. */
  cpuPct: number;
  rssMbBefore: number;
  rssMbAfter: number;
  heapUsedMbBefore: number;
  heapUsedMbAfter: number;
  /** How late the server's event loop ran during the measured run. */
  eventLoopDelayMs: { mean: number; p99: number; max: number };
  /** Lines the server printed during warm-up and the measured run. */
  logLines: number;
}

export interface TargetResult {
  name: string;
  description: string;
  request: string;
  warmup: { durationSec: number; requests: number; rpsMean: number; errors: number; timeouts: number; non2xx: number };
  measured: LoadResult;
  server: ServerUsage;
}

export interface Ratio {
  name: string;
  value: number;
  /** What "good" means for this ratio, when there is a goal. */
  goal?: { min?: number; max?: number };
  verdict?: 'PASS' | 'BELOW TARGET';
  note: string;
}

export interface ScenarioResult {
  name: string;
  description: string;
  targets: TargetResult[];
  ratios: Ratio[];
  /** Anything that makes the figures suspect (errors, non-2xx, server output); empty when clean. */
  problems: string[];
  /** With `--profile`: each server's top self-time frames over its whole life (start-up, warm-up and measured run). */
  profiles?: ServerProfile[];
}

/** One self-contained measurement; add a module under scenarios/ and register it in scenarios/index.ts. */
export interface Scenario {
  name: string;
  description: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}
