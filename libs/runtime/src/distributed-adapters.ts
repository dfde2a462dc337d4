import type { UnitOfWork } from '@estate/bus';
import { MongoUnitOfWork } from '@estate/bus/mongo.unit-of-work';
import { NatsBus } from '@estate/bus/nats.bus';
import type { Logger } from '@estate/platform/logging';
import type { DocumentStore } from '@estate/store';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import type { ProcessConfig } from './service-process';
import { waitFor } from '@estate/platform/lifecycle';

export interface DistributedAdapters {
  store: DocumentStore;
  bus: NatsBus;
  /** Writes and their events: one atomic document write each, with the document's own outbox (no multi-document transactions). */
  units: UnitOfWork;
  readiness: Record<string, () => Promise<void>>;
  close(): Promise<void>;
}

/**
 * The distributed profile's store (MongoDB, a database per service) and bus (NATS JetStream), waited for
 * when they are not up yet.
 */
export async function connectDistributedAdapters(
  config: ProcessConfig,
  service: string,
  log: Logger,
): Promise<DistributedAdapters> {
  const store = await waitFor(
    'store',
    () => MongoDocumentStore.connect(config.mongodb.url, { dbName: config.mongodb.database, log }),
    log,
  );
  const bus = await waitFor(
    'bus',
    () =>
      NatsBus.connect(config.nats.url, {
        log,
        name: service,
        namespace: config.nats.namespace,
        ...(config.nats.user ? { user: config.nats.user, password: config.nats.password } : {}),
      }),
    log,
  ).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  return {
    store,
    bus,
    units: new MongoUnitOfWork({ bus, log }),
    readiness: { store: () => store.ping(), bus: () => bus.ping() },
    async close() {
      await bus.close();
      await store.close();
    },
  };
}
