/** Messages between the bench (parent) and a server it forked (`--serve <kind>`), over Node IPC. */

export const targetKinds = ['embedded', 'bare'] as const;
export type TargetKind = (typeof targetKinds)[number];

export function isTargetKind(value: string): value is TargetKind {
  return (targetKinds as readonly string[]).includes(value);
}

/** The whole embedded product (gateway edge + services on SQLite + in-process bus). */
export interface EmbeddedSpec {
  kind: 'embedded';
  dataDir: string;
  adminApiKey: string;
  rateLimitPerMinute: number;
  logLevel: 'silent' | 'warn' | 'error';
  /**
   * Search bench: which index serves listings (the product's own SQLite one unless Elasticsearch), and how
   * many generated listings are written straight into the data folder (SQLite) or the index before it serves.
   */
  search?: { index: 'sqlite' } | { index: 'elasticsearch'; url: string; alias: string };
  seedListings?: number;
  /** Webhooks bench: the platform key (to make accounts) and delivery settings. */
  platformApiKey?: string;
  webhooks?: { allowPrivateTargets: boolean; retryScheduleMs?: number[] };
  /** Feeds bench: feeds may read from this host (the source is another bench server or a local test source). */
  feeds?: { allowPrivateSources: boolean };
}

/** Plain `fastify()` with no plugins: fixed JSON answers, the baseline. */
export interface BareSpec {
  kind: 'bare';
  routes: Array<{ method: 'GET' | 'POST'; url: string; body: unknown; status?: number }>;
}

export type TargetSpec = EmbeddedSpec | BareSpec;

/** A point-in-time reading of the server process, so the parent can take differences. */
export interface ServerSample {
  rssBytes: number;
  heapUsedBytes: number;
  cpuUserMicros: number;
  cpuSystemMicros: number;
  /** Event-loop delay since the last reset (ms). */
  eventLoopDelay: { meanMs: number; p99Ms: number; maxMs: number };
}

export type ParentMessage =
  { type: 'start'; spec: TargetSpec } | { type: 'sample'; id: number; resetEventLoopDelay: boolean } | { type: 'stop' };

export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'failed'; message: string }
  | { type: 'sample'; id: number; sample: ServerSample };
