import { subjects, streams, type StreamName, type Subject } from '@estate/contracts/events';
import { RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';

/** How the bus lays out its JetStream streams: names under a namespace, and each stream's configuration. */

const EVENT_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** The stream holding a subject (from the contracts). */
export function streamOf(subject: Subject): StreamName {
  return subjects[subject].stream as StreamName;
}

/** Subject and stream names as they are on the server, for a namespace (or none). */
export class Names {
  constructor(private readonly namespace?: string) {
    if (namespace !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(namespace))
      throw new Error(`invalid NATS namespace "${namespace}"`);
  }
  subject(s: string): string {
    return this.namespace ? `${this.namespace}.${s}` : s;
  }
  local(s: string): string {
    return this.namespace && s.startsWith(`${this.namespace}.`) ? s.slice(this.namespace.length + 1) : s;
  }
  stream(name: StreamName): string {
    return this.namespace ? `${this.namespace}_${name}` : name;
  }
}

export function desiredStream(name: StreamName, names: Names): StreamConfig {
  const def = streams[name] as { subjects: readonly string[]; workQueue: boolean };
  return {
    name: names.stream(name),
    subjects: def.subjects.map((x) => names.subject(x)),
    retention: def.workQueue ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: StorageType.File,
    // A work queue keeps a job until it is acknowledged; event streams keep a week of history.
    max_age: def.workQueue ? 0 : nanos(EVENT_MAX_AGE_MS),
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  } as StreamConfig;
}

/** True when the server version is at least `min` (semver, `x.y.z`). */
export function versionAtLeast(version: string | undefined, min: [number, number, number]): boolean {
  const parts = (version ?? '0.0.0').split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((parts[i] ?? 0) !== min[i]) return (parts[i] ?? 0) > min[i];
  }
  return true;
}

export const sameList = (a: readonly string[] = [], b: readonly string[] = []) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
