import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One function's share of a CPU profile's samples, by the time spent in it alone (not in what it called). */
export interface ProfileFrame {
  /** `name (file:line)`, bundled code mapped back to its source; V8's own entries as it names them (`(garbage collector)`). */
  frame: string;
  selfMs: number;
  /** Share of the busy time (every sample but `(idle)`). */
  selfPct: number;
}

export interface ServerProfile {
  server: string;
  /** The `.cpuprofile` file (open it in Chrome DevTools or VS Code for the call tree). */
  file: string;
  totalMs: number;
  /** Time the event loop waited for work (`(idle)` samples), left out of the shares. */
  idleMs: number;
  top: ProfileFrame[];
}

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };

/** The parts of V8's `.cpuprofile` format read here. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  samples?: number[];
  timeDeltas?: number[];
}

const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Source maps of the bundles (esbuild writes `<bundle>.js.map` beside each), read once. */
class SourceMaps {
  private readonly maps = new Map<string, SourceMap | null>();

  /** `file:line` of the source, or of the script itself when it has no map. */
  locate(url: string, line: number, column: number): string {
    const path = url.startsWith('file://') ? fileURLToPath(url) : url;
    const map = path.startsWith('/') ? this.mapOf(path) : null;
    const entry = map?.findEntry(line, column);
    if (entry && 'originalSource' in entry) {
      const source = entry.originalSource.startsWith('file://')
        ? fileURLToPath(entry.originalSource)
        : resolve(dirname(path), entry.originalSource);
      return `${relative(process.cwd(), source)}:${entry.originalLine + 1}`;
    }
    // V8's line numbers start at 0.
    return `${path.startsWith('/') ? relative(process.cwd(), path) : path}:${line + 1}`;
  }

  private mapOf(path: string): SourceMap | null {
    let map = this.maps.get(path);
    if (map === undefined) {
      map = existsSync(`${path}.map`) ? new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8'))) : null;
      this.maps.set(path, map);
    }
    return map;
  }
}

/** The `count` frames with the most self time, the same function at different call sites counted once. */
export function topSelfFrames(
  profile: CpuProfile,
  count: number,
): { totalMs: number; idleMs: number; top: ProfileFrame[] } {
  const maps = new SourceMaps();
  const nameOf = new Map(
    profile.nodes.map(({ id, callFrame: f }) => [
      id,
      f.url
        ? `${f.functionName || '(anonymous)'} (${maps.locate(f.url, f.lineNumber, f.columnNumber)})`
        : f.functionName || '(native, unnamed)',
    ]),
  );
  const selfUs = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let totalUs = 0;
  // A sample's delta is the time since the previous one: it is charged to the frame sampled next.
  for (let i = 0; i < samples.length; i++) {
    const us = Math.max(0, deltas[i + 1] ?? 0);
    const name = nameOf.get(samples[i]) ?? '(unknown)';
    selfUs.set(name, (selfUs.get(name) ?? 0) + us);
    totalUs += us;
  }
  const idleUs = selfUs.get('(idle)') ?? 0;
  selfUs.delete('(idle)');
  const busyUs = totalUs - idleUs;
  const top = [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, us]) => ({
      frame,
      selfMs: round(us / 1000, 1),
      selfPct: busyUs ? round((us / busyUs) * 100, 1) : 0,
    }));
  return { totalMs: round(totalUs / 1000, 1), idleMs: round(idleUs / 1000, 1), top };
}

export async function summariseProfile(server: string, file: string, count = 10): Promise<ServerProfile> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  return { server, file: relative(process.cwd(), file), ...topSelfFrames(profile, count) };
}
