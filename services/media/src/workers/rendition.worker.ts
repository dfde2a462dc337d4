import type { Bus, BusMessage, Subscription } from '@estate/bus';
import type { EventPayload } from '@estate/contracts/events';
import { newId } from '@estate/platform/ids';
import type { RenditionService } from '../rendition.service';
import { AccountTurns } from './account-turns';

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

/** How the rendition worker shares its work between accounts (see {@link AccountTurns}). */
export interface RenditionTurns {
  /** Images rendered at once. */
  slots: number;
  /** Jobs taken from the queue and held at once (rendering or waiting their turn). */
  window: number;
  /** Jobs one account may hold of the window; more of its jobs go back to the queue. */
  share: number;
  /** How long a job beyond its account's share waits for room before it goes back. */
  shareWaitMs: number;
}

/**
 * Takes rendition jobs from the queue, up to `window` at once, and renders `slots` of them at a
 * time, taking turns between accounts: one account's queue holds up another account's photo by
 * at most the renders already running. An account's jobs beyond its `share` of the window go back
 * to the end of the queue (as a sweep would queue them), so the window always has room for others.
 */
export class RenditionWorker {
  private subscription?: Subscription;
  private readonly turns: AccountTurns;
  /** Jobs this worker holds (rendering, or waiting for a render slot). */
  private held = 0;
  private readonly roomWaiters: Array<{ limit: number; wake: () => void }> = [];

  constructor(
    private readonly deps: {
      bus: Bus;
      renditions: RenditionService;
      queue: RenditionQueue;
      turns: RenditionTurns;
    },
  ) {
    this.turns = new AccountTurns(deps.turns.slots, deps.turns.share);
  }

  async start(): Promise<void> {
    const options = {
      durable: WORKERS_DURABLE,
      ackWaitMs: JOB_ACK_WAIT_MS,
      maxDeliver: JOB_MAX_DELIVER,
      prefetch: 1,
      concurrency: this.deps.turns.window,
      orderKey: (m: BusMessage<'media.image.process'>) => m.payload.mediaId,
    };
    this.subscription = await this.deps.bus.subscribe(['media.image.process'], options, async (m) => {
      const { eventId: _eventId, ...job } = m.payload;
      this.held++;
      try {
        const ran = await this.turns.run(
          job.accountId,
          () => this.deps.renditions.process(m.payload, m.requestId),
          this.deps.turns.shareWaitMs,
        );
        if (!ran) await this.deps.queue.enqueue(job, m.requestId);
      } finally {
        this.held--;
        this.wakeWaiters();
      }
    });
  }

  /**
   * Resolves once this worker holds fewer than `limit` jobs, or is stopped: a producer that can wait (a feed's
   * photos) keeps the backlog of images waiting for a render, and the memory it holds, small.
   */
  async whenBelow(limit: number): Promise<void> {
    if (!this.subscription || this.held < limit) return;
    await new Promise<void>((wake) => this.roomWaiters.push({ limit, wake }));
  }

  async stop(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = undefined;
    this.wakeWaiters();
    await subscription?.stop();
  }

  /** Wakes, in the order they came, the producers that have room now (every one once stopped). */
  private wakeWaiters(): void {
    for (const waiter of this.roomWaiters.splice(0)) {
      if (!this.subscription || this.held < waiter.limit) waiter.wake();
      else this.roomWaiters.push(waiter);
    }
  }
}
