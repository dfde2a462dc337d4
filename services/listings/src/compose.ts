import { OutboxRelay, type Bus, type OutboxDoc } from '@estate/bus';
import type { DocumentCollection, DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { ListingsService } from './listings.service';
import { LISTINGS_COLLECTION, ListingRepository } from './repositories/listing.repository';

export interface ListingsRuntime {
  service: ListingsService;
  relay: OutboxRelay;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Wires the listings service over whichever adapters the profile chose. */
export async function composeListings(deps: { store: DocumentStore; bus: Bus; log: Logger; clock?: () => Date }): Promise<ListingsRuntime> {
  const log = deps.log.child({ service: 'listings' });
  const listings = await ListingRepository.open(deps.store);
  const relay = new OutboxRelay({ bus: deps.bus, log });
  relay.watch(LISTINGS_COLLECTION, listings.collection as unknown as DocumentCollection<OutboxDoc>);
  const service = new ListingsService({ listings, outbox: relay, clock: deps.clock ?? (() => new Date()), log });
  return {
    service,
    relay,
    async start() {
      relay.start();
    },
    async stop() {
      await relay.stop();
    },
  };
}
