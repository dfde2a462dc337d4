// Domain metrics, one set per process, served by every /metrics beside the HTTP and process metrics. Code that
// does the work counts it here (bulk workers, rendition workers, the outbox relay, the bus adapters); gauges that
// describe a backlog are read from their sources when Prometheus scrapes.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export const domainRegistry = new Registry();

/** What a bus reports at scrape time: the backlog of each durable consumer and of each work queue. */
export interface BacklogSource {
  backlog(): Promise<{
    consumers: { durable: string; stream: string; pending: number }[];
    queues: { stream: string; depth: number }[];
  }>;
}
const sources = new Set<BacklogSource>();

/** A bus registers itself while it runs; its backlog is read on every scrape. */
export function reportBacklog(source: BacklogSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

async function backlogs() {
  const all = await Promise.all([...sources].map((s) => s.backlog().catch(() => ({ consumers: [], queues: [] }))));
  return {
    consumers: all.flatMap((b) => b.consumers),
    queues: all.flatMap((b) => b.queues),
  };
}

const registers = [domainRegistry];

export const metrics = {
  jobsSubmitted: new Counter({
    name: 'estate_jobs_submitted_total',
    help: 'Background jobs accepted, by type',
    labelNames: ['type'],
    registers,
  }),
  jobsFinished: new Counter({
    name: 'estate_jobs_finished_total',
    help: 'Background jobs that reached a final state, by type and state',
    labelNames: ['type', 'state'],
    registers,
  }),
  jobDuration: new Histogram({
    name: 'estate_job_duration_seconds',
    help: 'Time from a job starting to its final state, by type and state',
    labelNames: ['type', 'state'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  }),
  mediaProcessing: new Histogram({
    name: 'estate_media_processing_seconds',
    help: 'Time to make the renditions of one image, by outcome (ready, failed)',
    labelNames: ['outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers,
  }),
  mediaFailures: new Counter({
    name: 'estate_media_processing_failures_total',
    help: 'Images whose processing failed for good, by reason',
    labelNames: ['reason'],
    registers,
  }),
  outboxLag: new Histogram({
    name: 'estate_outbox_lag_seconds',
    help: 'Time from an event being written with its change to its publication on the bus, by subject',
    labelNames: ['subject'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    registers,
  }),
  redeliveries: new Counter({
    name: 'estate_bus_redeliveries_total',
    help: 'Messages delivered again to a consumer after a failure or a lost acknowledgement, by subject and consumer',
    labelNames: ['subject', 'durable'],
    registers,
  }),
  consumerLag: new Gauge({
    name: 'estate_bus_consumer_pending_messages',
    help: 'Messages a durable consumer has not yet handled (its lag), by stream and consumer',
    labelNames: ['stream', 'durable'],
    registers,
    async collect() {
      this.reset();
      for (const c of (await backlogs()).consumers) this.set({ stream: c.stream, durable: c.durable }, c.pending);
    },
  }),
  queueDepth: new Gauge({
    name: 'estate_queue_depth',
    help: 'Messages waiting in a work queue (bulk jobs, image processing, activity commands), by stream',
    labelNames: ['stream'],
    registers,
    async collect() {
      this.reset();
      for (const q of (await backlogs()).queues) this.set({ stream: q.stream }, q.depth);
    },
  }),
  webhookDeliveries: new Counter({
    name: 'estate_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (succeeded, failed, retrying)',
    labelNames: ['outcome'],
    registers,
  }),
};

/** Seconds since an ISO 8601 time (0 when it cannot be read). */
export function secondsSince(iso: string | null | undefined, now = Date.now()): number {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(t) ? 0 : Math.max(0, (now - t) / 1000);
}
