import { serviceLogger } from '@estate/platform/logging';
import { availableParallelism } from 'node:os';
import type { BlobStore } from '@estate/blobs';
import { OutboxRelay, type Bus, type UnitOfWork } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import type { ListingLookup } from './clients/listings.client';
import { ListingsSubscriber } from './events/listings.subscriber';
import { GalleryService } from './gallery.service';
import { DEFAULT_MAX_PIXELS, DEFAULT_RENDER_TIMEOUT_SECONDS } from './image.rules';
import { ListingProjectionService } from './listing-projection.service';
import { RenditionService } from './rendition.service';
import { GALLERIES_COLLECTION, GalleryRepository } from './repositories/gallery.repository';
import { ImageRendererRepository } from './repositories/image-renderer.repository';
import { MediaFilesRepository } from './repositories/media-files.repository';
import { SweepService } from './sweep.service';
import { TrashService } from './trash.service';
import { UploadService } from './upload.service';
import { BusRenditionQueue, RenditionWorker, type RenditionTurns } from './workers/rendition.worker';
import { SweepWorker } from './workers/sweep.worker';

export interface MediaOptions {
  /** Largest image accepted, in pixels as declared by its header. */
  maxPixels: number;
  /** Images rendered at once by this process (each holds one decoded image in memory). */
  workers: number;
  /** Seconds of work each step of a render may take before the image is marked failed. */
  renderTimeoutSeconds: number;
  /** A `processing` image whose job was queued this long ago is queued again by the sweep. */
  requeueAfterMs: number;
  sweepEveryMs: number;
}

export const defaultMediaOptions: MediaOptions = {
  maxPixels: DEFAULT_MAX_PIXELS,
  workers: Math.min(2, availableParallelism()),
  renderTimeoutSeconds: DEFAULT_RENDER_TIMEOUT_SECONDS,
  requeueAfterMs: 5 * 60 * 1000,
  sweepEveryMs: 60 * 1000,
};

/** libvips threads per render when `workers` renders may run at once. */
export function renderThreads(workers: number): number {
  return Math.max(1, Math.floor(availableParallelism() / workers));
}

export interface MediaRuntime {
  gallery: GalleryService;
  uploads: UploadService;
  sweep: SweepService;
  relay: OutboxRelay;
  /** Images this process holds for rendering: a producer that can wait waits for fewer than `limit`. */
  renders: { whenBelow(limit: number): Promise<void> };
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Wires the media service over whichever adapters the profile chose. */
export async function composeMedia(deps: {
  store: DocumentStore;
  bus: Bus;
  blobs: BlobStore;
  /** The listings service (over HTTP when distributed, a direct call when embedded). */
  listings: ListingLookup;
  log: Logger;
  clock?: () => Date;
  options?: Partial<MediaOptions>;
  /** How a write and its events commit, chosen by the profile (docs/decisions/0126-unit-of-work.md). */
  units: UnitOfWork;
  /**
   * Where rendition jobs wait, chosen by the profile: in this process only (the in-process bus, whose process
   * is the only worker), or in a queue the replicas share (JetStream).
   */
  queue: 'in-process' | 'shared';
}): Promise<MediaRuntime> {
  const options = { ...defaultMediaOptions, ...deps.options };
  const log = serviceLogger(deps.log, 'media');
  const clock = deps.clock ?? (() => new Date());
  const { bus } = deps;
  const galleries = await GalleryRepository.open(deps.store);
  const relay = new OutboxRelay({ bus, log, units: deps.units });
  relay.watch(GALLERIES_COLLECTION, galleries.collection);
  const files = new MediaFilesRepository(deps.blobs);
  // The embedded process renders one image at a time: it shares its CPUs with every other service.
  const inProcess = deps.queue === 'in-process';
  const workers = inProcess ? 1 : options.workers;
  // Which jobs wait their turn here: in process, every queued job (the in-process queue holds them all
  // anyway); over NATS, a few per render slot, so that replicas share the queue.
  const turns: RenditionTurns = inProcess
    ? { slots: workers, window: 10_000, share: 10_000, shareWaitMs: 0 }
    : { slots: workers, window: workers * 8, share: workers * 2, shareWaitMs: 2000 };
  // libvips threads are shared out between the pipelines, so renders never oversubscribe the CPUs.
  const images = new ImageRendererRepository({
    maxPixels: options.maxPixels,
    pipelines: workers,
    threadsPerPipeline: renderThreads(workers),
    renderTimeoutSeconds: options.renderTimeoutSeconds,
  });
  const queue = new BusRenditionQueue(bus);
  const trash = new TrashService({ galleries, files, clock, log });
  const listings = new ListingProjectionService({ galleries, trash, clock, log });
  const gallery = new GalleryService({
    galleries,
    files,
    trash,
    outbox: relay,
    clock,
    listings: deps.listings,
    projection: listings,
  });
  const uploads = new UploadService({ galleries, files, images, trash, queue, gallery, outbox: relay, clock, log });
  const renditions = new RenditionService({ galleries, files, images, outbox: relay, clock, log });
  const sweep = new SweepService({ galleries, trash, queue, clock, log });

  const renderer = new RenditionWorker({ bus, renditions, queue, turns });
  const subscribers = [new ListingsSubscriber({ bus, listings }), renderer];
  const sweeper = new SweepWorker({
    sweep,
    everyMs: options.sweepEveryMs,
    requeueAfterMs: options.requeueAfterMs,
    firstRequeueAfterMs: inProcess ? 0 : options.requeueAfterMs,
    log,
  });
  return {
    gallery,
    uploads,
    sweep,
    relay,
    renders: { whenBelow: (limit) => renderer.whenBelow(limit) },
    async start() {
      relay.start();
      for (const subscriber of subscribers) await subscriber.start();
      await sweeper.start();
    },
    async stop() {
      await sweeper.stop();
      await Promise.all(subscribers.map((s) => s.stop()));
      await relay.stop();
      await images.stop();
    },
  };
}
