import { setTimeout as sleep } from 'node:timers/promises';
import { describeWithEngines, eventually, listingBody } from '@estate/testing';
import { apiClient, startCluster, type Api, type Cluster, type RunningService } from './harness';
import { privateStore, type PrivateStore } from './private-store';

/** How long the store is away. */
const OUTAGE_MS = 8000;
/** A request slower than this counts as hanging (generous: the target is an answer within 2 s). */
const HANG_MS = 6000;
const WORKERS = 4;

interface Outcome {
  op: 'read' | 'write';
  /** When it was sent (Date.now()). */
  at: number;
  status: number;
  code?: string;
  retryAfter: string | null;
  ms: number;
  id?: string;
  externalId?: string;
}

/**
 * Tier 3: the store (FerretDB of the test's own) goes away for 8 s while clients read and write through the
 * gateway. Every request answers, fast: a success, or 503 `dependency_unavailable` with Retry-After, never a 500
 * or a hang; readiness says so within a second; once the store is back the same processes serve again, and every
 * write they acknowledged is there, once. The processes are also started before the store is, and wait for it.
 */
describeWithEngines(
  'store outage (separate processes, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let store: PrivateStore;
    let cluster: Cluster | undefined;
    let api: Api;

    beforeAll(async () => {
      store = await privateStore();
      // The processes start first and wait for their store; it comes up once the listings process said it waits.
      let listings: RunningService | undefined;
      const starting = startCluster({
        name: 'sysfaultstore',
        engines: { ...urls, MONGODB_URL: store.url },
        replicas: { listings: 1, media: 0, leads: 0 },
        keys: { platform: false },
        onStarted: (s) => void (s.name === 'listings' && (listings = s)),
      });
      starting.catch(() => undefined);
      await eventually(
        () => {
          expect(listings?.output()).toContain('"msg":"waiting for the store"');
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      await store.start();
      cluster = await starting;
      api = apiClient(cluster.gateway, cluster.keys.admin);
    }, 180_000);

    afterAll(async () => {
      await cluster?.stop();
      await store?.destroy();
    }, 120_000);

    it('services started before their store wait for it, one log line per retry, and then serve', async () => {
      const listings = cluster!.process('listings').output();
      const waits = listings.split('\n').filter((l) => l.includes('"msg":"waiting for the store"'));
      expect(waits.length).toBeGreaterThan(0);
      expect(listings).toContain('"msg":"store is available"');
      // One line per retry, with the reason and no stack trace.
      for (const line of waits) expect(JSON.parse(line)).not.toHaveProperty('err');
      expect((await api('POST', '/v1/listings', listingBody())).status).toBe(201);
    });

    it('answers 503 dependency_unavailable with Retry-After while the store is away, then recovers without restarts', async () => {
      const seed = await api('POST', '/v1/listings', listingBody());
      expect(seed.status).toBe(201);
      const outcomes: Outcome[] = [];
      let n = 0;
      let running = true;
      const worker = async () => {
        while (running) {
          const write = n++ % 2 === 0;
          const externalId = write ? `F-${n}` : undefined;
          const started = Date.now();
          try {
            const res = write
              ? await api('POST', '/v1/listings', listingBody({ externalId, source: 'faults' }), {})
              : await api('GET', `/v1/listings/${seed.body.id}`);
            outcomes.push({
              op: write ? 'write' : 'read',
              at: started,
              status: res.status,
              code: res.body?.code,
              retryAfter: res.headers.get('retry-after'),
              ms: Date.now() - started,
              id: write && res.status === 201 ? res.body.id : undefined,
              externalId,
            });
          } catch {
            outcomes.push({
              op: write ? 'write' : 'read',
              at: started,
              status: 0,
              retryAfter: null,
              ms: Date.now() - started,
              externalId,
            });
          }
          await sleep(20);
        }
      };
      const workers = Array.from({ length: WORKERS }, worker);
      /** Both a read and a write sent after `since` succeeded. */
      const servedSince = (since: number) => {
        const ok = outcomes.filter((o) => o.at >= since && o.status < 300);
        expect(['read', 'write'].filter((op) => ok.some((o) => o.op === op))).toEqual(['read', 'write']);
      };
      await eventually(() => servedSince(0), { timeoutMs: 30_000 });

      await store.stop();
      const outageStarted = Date.now();
      // Readiness while the store is away: an answer, fast, saying what is missing.
      let probeMs = 0;
      await eventually(
        async () => {
          const probeStarted = Date.now();
          const ready = await fetch(`${cluster!.process('listings').url}/health/ready`);
          probeMs = Math.max(probeMs, Date.now() - probeStarted);
          expect(ready.status).toBe(503);
          expect(((await ready.json()) as { checks: unknown }).checks).toMatchObject({ store: 'unavailable' });
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      // The store stays away for the outage's length, and until the clients have met it.
      await eventually(
        () => {
          expect(outcomes.some((o) => o.at >= outageStarted && o.status === 503)).toBe(true);
          expect(Date.now() - outageStarted).toBeGreaterThanOrEqual(OUTAGE_MS);
        },
        { timeoutMs: OUTAGE_MS + 30_000, intervalMs: 100 },
      );
      await store.start();
      const restarted = Date.now();

      // The same processes serve again: the clients' reads and writes succeed after the restart.
      await eventually(() => servedSince(restarted), { timeoutMs: 60_000, intervalMs: 250 });
      running = false;
      await Promise.all(workers);
      const recoveredMs = Date.now() - restarted;

      const failures = outcomes.filter((o) => o.status >= 300);
      const summary = {
        requests: outcomes.length,
        ok: outcomes.length - failures.length,
        unavailable: failures.filter((o) => o.status === 503).length,
        other: failures.filter((o) => o.status !== 503).map((o) => `${o.op} ${o.status} ${o.code ?? ''}`),
        slowestMs: Math.max(...outcomes.map((o) => o.ms)),
        slow: outcomes.filter((o) => o.ms > 2000).map((o) => `${o.op} ${o.status} ${o.code ?? ''} ${o.ms} ms`),
        readinessMs: probeMs,
        recoveredWithinMs: recoveredMs,
      };
      process.stdout.write(`store outage: ${JSON.stringify(summary)}\n`);

      // The outage was seen, and only as 503 dependency_unavailable with Retry-After: no 500, no hang.
      expect(summary.unavailable).toBeGreaterThan(0);
      expect(summary.other).toEqual([]);
      for (const o of failures) {
        expect(o.code).toBe('dependency_unavailable');
        expect(Number(o.retryAfter)).toBeGreaterThan(0);
      }
      expect(summary.slowestMs).toBeLessThan(HANG_MS);
      expect(probeMs).toBeLessThan(HANG_MS);

      // Every acknowledged write is there, once.
      const acknowledged = outcomes.filter((o) => o.id);
      for (const o of acknowledged) {
        const read = await api('GET', `/v1/listings/${o.id}`);
        expect(read.status).toBe(200);
        expect(read.body.externalId).toBe(o.externalId);
      }
      expect(new Set(acknowledged.map((o) => o.id)).size).toBe(acknowledged.length);

      // Failed probes and the outbox's retries log one line each, never a stack trace.
      const lines = cluster!.process('listings').output().split('\n');
      expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
      // The outage's length, the store's start and the recovery, on a machine that may be busy.
    }, 180_000);
  },
);
