import { availableParallelism } from 'node:os';
import type { BlobStore } from '@estate/blobs';
import { OutboxRelay, type Bus, type Subscription } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { busJobQueue, subscribeImageJobs } from './events/image-jobs';
import { subscribeListings } from './events/listings.subscriber';
import { DEFAULT_MAX_PIXELS } from './image.rules';
import { MediaProcessingService } from './media-processing.service';
import { MediaService } from './media.service';
import { GALLERIES_COLLECTION, GalleryRepository } from './repositories/gallery.repository';
import { ImageProcessor } from './repositories/image.processor';
import { MediaFiles } from './repositories/media-files.repository';

export interface MediaOptions {
  /** Largest image accepted, in pixels as declared by its header. */
  maxPixels: number;
  /** Images rendered at once by this process (each holds one decoded image in memory). */
  workers: number;
  /** How long a request waits for a listing this service has not heard of yet. */
  listingWaitMs: number;
  /** A `processing` image whose job was queued this long ago is queued again by the sweep. */
  requeueAfterMs: number;
  sweepEveryMs: number;
}

export const defaultMediaOptions: MediaOptions = {
  maxPixels: DEFAULT_MAX_PIXELS,
  workers: Math.min(2, availableParallelism()),
  listingWaitMs: 3000,
  requeueAfterMs: 5 * 60 * 1000,
  sweepEveryMs: 60 * 1000,
};

/** libvips threads per render when `workers` renders may run at once. */
export function renderThreads(workers: number): number {
  return Math.max(1, Math.floor(availableParallelism() / workers));
}

export interface MediaRuntime {
  service: MediaService;
  processing: MediaProcessingService;
  relay: OutboxRelay;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Wires the media service over whichever adapters the profile chose. */
export async function composeMedia(deps: {
  store: DocumentStore;
  bus: Bus;
  blobs: BlobStore;
  log: Logger;
  clock?: () => Date;
  options?: Partial<MediaOptions>;
}): Promise<MediaRuntime> {
  const options = { ...defaultMediaOptions, ...deps.options };
  const log = deps.log.child({ service: 'media' });
  const clock = deps.clock ?? (() => new Date());
  const galleries = await GalleryRepository.open(deps.store);
  const relay = new OutboxRelay({ bus: deps.bus, log });
  relay.watch(GALLERIES_COLLECTION, galleries.collection);
  const files = new MediaFiles(deps.blobs);
  // The in-process bus hands a consumer group one message at a time: one render runs at once there.
  const workers = deps.bus.kind === 'memory' ? 1 : options.workers;
  // libvips threads are shared out between the pipelines, so renders never oversubscribe the CPUs.
  const images = new ImageProcessor({ maxPixels: options.maxPixels, pipelines: workers, threadsPerPipeline: renderThreads(workers) });
  const jobs = busJobQueue(deps.bus);
  const shared = { galleries, files, images, jobs, outbox: relay, clock, log };
  const service = new MediaService({ ...shared, listingWaitMs: options.listingWaitMs });
  const processing = new MediaProcessingService(shared);

  let subscriptions: Subscription[] = [];
  let timer: NodeJS.Timeout | undefined;
  const sweep = (requeueAfterMs: number) =>
    processing.sweep({ requeueAfterMs }).catch((err: unknown) => {
      log.warn({ err }, 'media sweep failed; it runs again later');
    });
  return {
    service,
    processing,
    relay,
    async start() {
      relay.start();
      subscriptions = [
        await subscribeListings(deps.bus, processing),
        ...(await subscribeImageJobs(deps.bus, workers, (job, requestId) => processing.process(job, requestId))),
      ];
      // Jobs queued in memory died with the last process: queue every unfinished image again.
      await sweep(deps.bus.kind === 'memory' ? 0 : options.requeueAfterMs);
      timer = setInterval(() => void sweep(options.requeueAfterMs), options.sweepEveryMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await Promise.all(subscriptions.map((s) => s.stop()));
      await relay.stop();
    },
  };
}
