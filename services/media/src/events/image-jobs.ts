import type { Bus, Subscription } from '@estate/bus';
import type { EventPayload } from '@estate/contracts/events';

export type ImageJob = EventPayload<'media.image.process'>;

/** Where upload commits hand images to the workers. */
export interface ImageJobQueue {
  enqueue(job: ImageJob, requestId?: string): Promise<void>;
}

const WORKERS_DURABLE = 'media-image-workers';
/** Rendering a 50-megapixel image takes seconds, not this long; a delivery silent this long is presumed lost. */
const JOB_ACK_WAIT_MS = 120_000;
/** Retries of a job that failed for a reason other than the image (store or blob store down). */
const JOB_MAX_DELIVER = 6;

/**
 * `media.image.process` over the bus: a work queue, one delivery per job across the replicas.
 * Every enqueue is a new message (its own event id): a sweep re-queues a job because the first
 * one was lost, and a job that runs twice finds the image done and changes nothing.
 */
export function busJobQueue(bus: Bus): ImageJobQueue {
  return { enqueue: (job, requestId) => bus.publish('media.image.process', job, { requestId }) };
}

/**
 * Starts `workers` consumers of the job queue in this process (each handles one job at a time:
 * prefetching would leave jobs waiting out their ack wait behind a long render).
 */
export async function subscribeImageJobs(bus: Bus, workers: number, handle: (job: ImageJob, requestId?: string) => Promise<void>): Promise<Subscription[]> {
  const subs: Subscription[] = [];
  for (let i = 0; i < workers; i++) {
    subs.push(
      await bus.subscribe(['media.image.process'], { durable: WORKERS_DURABLE, ackWaitMs: JOB_ACK_WAIT_MS, maxDeliver: JOB_MAX_DELIVER, prefetch: 1 }, (m) =>
        handle(m.payload, m.requestId),
      ),
    );
  }
  return subs;
}
