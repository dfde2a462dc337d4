import type { Bus, UnitOfWork } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { ReceiverClient } from './clients/receiver.client';
import type { ResourceReader } from './clients/resources.client';
import { DeliveriesService } from './deliveries.service';
import { DeliveryAttemptService } from './delivery-attempt.service';
import { DEFAULT_RETRY_SCHEDULE_MS } from './delivery.rules';
import { EndpointsService } from './endpoints.service';
import { EventIntakeService } from './event-intake.service';
import { DomainEventsSubscriber } from './events/domain-events.subscriber';
import { EntityEventService } from './entity-events.service';
import { FeedService } from './feed.service';
import { DeliveryRepository } from './repositories/delivery.repository';
import { EndpointRepository } from './repositories/endpoint.repository';
import { FeedRepository } from './repositories/feed.repository';
import { SecretBox } from '@estate/platform/secrets';
import { SIGNING_SECRETS_KEY } from './secrets.rules';
import { DeliveryWorker } from './workers/delivery.worker';
import { RetentionWorker } from './workers/retention.worker';

export interface WebhooksOptions {
  /** `true` lets endpoints target http, private, loopback and link-local addresses (tests, local development). */
  allowPrivateTargets: boolean;
  /** Delays between attempts; its length + 1 is the number of attempts. */
  retryScheduleMs: number[];
  leaseMs: number;
  concurrency: number;
  endpointConcurrency: number;
  pollMs: number;
  /** How long a feed event waits before readers see it (lets concurrent writers of earlier numbers finish). */
  feedSettleMs: number;
  /** How long a rotated-out signing secret keeps signing deliveries beside the new one (0: not at all). */
  secretOverlapMs: number;
}

export const defaultWebhooksOptions: WebhooksOptions = {
  allowPrivateTargets: false,
  retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
  leaseMs: 60_000,
  concurrency: 256,
  endpointConcurrency: 16,
  pollMs: 500,
  feedSettleMs: 1000,
  secretOverlapMs: 24 * 60 * 60 * 1000,
};

export interface WebhooksRuntime {
  endpoints: EndpointsService;
  deliveries: DeliveriesService;
  feed: FeedService;
  entityEvents: EntityEventService;
  publicBaseUrl?: string;
  intake: EventIntakeService;
  worker: DeliveryWorker;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Wires the webhooks service over whichever adapters the profile chose. */
export async function composeWebhooks(deps: {
  store: DocumentStore;
  bus: Bus;
  log: Logger;
  resources: ResourceReader;
  /** The key the signing secrets are stored under. */
  secretKey: string;
  clock?: () => Date;
  options?: Partial<WebhooksOptions>;
  /** How an event's feed entries and deliveries commit, chosen by the profile (docs/decisions/0126-unit-of-work.md). */
  units: UnitOfWork;
  /** Links of the RESO EntityEvent resource use it; otherwise the address the client reached. */
  publicBaseUrl?: string;
  /**
   * Domain events of a stream the intake reads at once (1 when not given). Their units start in the stream's order;
   * more than one only where units also run in the order they start and commit together (SQLite's unit of work):
   * elsewhere two events of one resource could store their deliveries out of order.
   */
  intakeConcurrency?: number;
}): Promise<WebhooksRuntime> {
  const options = { ...defaultWebhooksOptions, ...deps.options };
  const log = deps.log.child({ service: 'webhooks' });
  const clock = deps.clock ?? (() => new Date());
  const endpointRepo = await EndpointRepository.open(deps.store);
  const deliveryRepo = await DeliveryRepository.open(deps.store);
  const feedRepo = await FeedRepository.open(deps.store);
  const secrets = new SecretBox(deps.secretKey, SIGNING_SECRETS_KEY);
  const receiver = new ReceiverClient({ allowPrivateTargets: options.allowPrivateTargets });
  const attempt = new DeliveryAttemptService({
    endpoints: endpointRepo,
    deliveries: deliveryRepo,
    receiver,
    secrets,
    retryScheduleMs: options.retryScheduleMs,
    clock,
    log,
  });
  const worker = new DeliveryWorker({ deliveries: deliveryRepo, attempt, options, clock, log });
  const onQueued = () => worker.kick();
  const endpoints = new EndpointsService({
    endpoints: endpointRepo,
    deliveries: deliveryRepo,
    secrets,
    targetRefusal: (url) => receiver.refusal(url),
    secretOverlapMs: options.secretOverlapMs,
    clock,
  });
  const deliveries = new DeliveriesService({ endpoints, deliveries: deliveryRepo, onQueued, clock });
  const feed = new FeedService({ feed: feedRepo, clock, settleMs: options.feedSettleMs });
  const entityEvents = new EntityEventService({ feed: feedRepo, clock, settleMs: options.feedSettleMs });
  const intake = new EventIntakeService({
    feed: feedRepo,
    endpoints: endpointRepo,
    deliveries: deliveryRepo,
    resources: deps.resources,
    dispatcher: worker,
    clock,
    log,
    units: deps.units,
  });
  const subscriber = new DomainEventsSubscriber({ bus: deps.bus, intake, concurrency: deps.intakeConcurrency ?? 1 });
  const retention = new RetentionWorker({ feed: feedRepo, deliveries: deliveryRepo, clock, log });
  return {
    endpoints,
    deliveries,
    feed,
    entityEvents,
    ...(deps.publicBaseUrl ? { publicBaseUrl: deps.publicBaseUrl } : {}),
    intake,
    worker,
    async start() {
      await subscriber.start();
      worker.start();
      retention.start();
    },
    async stop() {
      retention.stop();
      await subscriber.stop();
      await worker.stop();
      receiver.close();
    },
  };
}
