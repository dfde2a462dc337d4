import type { Bus, Subscription } from '@estate/bus';
import type { EventPayload } from '@estate/contracts/events';
import { newId } from '@estate/platform/ids';
import type { RenditionService } from '../rendition.service';

export type RenditionJob = EventPayload<'media.image.process'>;

/** Where upload commits and the sweep hand images to the rendition workers. */
export interface RenditionQueue {
  enqueue(job: Omit<RenditionJob, 'eventId'>, requestId?: string): Promise<void>;
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
export class BusRenditionQueue implements RenditionQueue {
  constructor(private readonly bus: Bus) {}

  enqueue(job: Omit<RenditionJob, 'eventId'>, requestId?: string): Promise<void> {
    return this.bus.publish('media.image.process', { ...job, eventId: newId('evt') }, { requestId });
  }
}

/**
 * Runs `workers` consumers of the rendition queue in this process (each handles one job at a
 * time: prefetching would leave jobs waiting out their ack wait behind a long render).
 */
export class RenditionWorker {
  private subscriptions: Subscription[] = [];

  constructor(private readonly deps: { bus: Bus; renditions: RenditionService; workers: number }) {}

  async start(): Promise<void> {
    const options = { durable: WORKERS_DURABLE, ackWaitMs: JOB_ACK_WAIT_MS, maxDeliver: JOB_MAX_DELIVER, prefetch: 1 };
    for (let i = 0; i < this.deps.workers; i++) {
      this.subscriptions.push(
        await this.deps.bus.subscribe(['media.image.process'], options, (m) =>
          this.deps.renditions.process(m.payload, m.requestId),
        ),
      );
    }
  }

  async stop(): Promise<void> {
    const subscriptions = this.subscriptions;
    this.subscriptions = [];
    await Promise.all(subscriptions.map((s) => s.stop()));
  }
}
