import { randomBytes } from 'node:crypto';
import { MemoryBus } from '@estate/bus/memory.bus';
import { type Bus, type BusMessage } from '@estate/bus';
import type { Subject } from '@estate/contracts/events';
import type { Listing } from '@estate/contracts/listings';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { type DocumentStore } from '@estate/store';
import { forwardedCall, identityFor, serveBehindGateway, unitsFor, type ForwardedCall } from '@estate/testing';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { leadsApp } from '../src/app';
import type { ListingLookup } from '../src/clients/listings.client';
import { composeLeads, type LeadsRuntime } from '../src/compose';

export const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** Every subject the leads service publishes. */
export const leadSubjects = [
  'leads.lead.created',
  'leads.lead.updated',
  'leads.lead.assigned',
  'leads.lead.scored',
  'leads.activity.recorded',
] as const;

export interface LeadsHarness {
  app: FastifyInstance;
  runtime: LeadsRuntime;
  bus: Bus;
  store: DocumentStore;
  /** Everything the leads service published, in order (after `runtime.relay.flush()`). */
  events: BusMessage<(typeof leadSubjects)[number]>[];
  call: ForwardedCall;
  close(): Promise<void>;
}

/** The leads service over HTTP with `app.inject()`, on the adapters given (embedded ones by default). */
export async function startLeads(
  options: {
    store?: DocumentStore;
    bus?: Bus;
    clock?: () => Date;
    /** The listings service as leads asks it (default: it knows no listing). */
    listings?: ListingLookup;
    record?: boolean;
    /** false: write as on MongoDB (the in-document outbox, nothing committed together), even on SQLite. */
    transactions?: boolean;
  } = {},
): Promise<LeadsHarness> {
  const store = options.store ?? SqliteDocumentStore.open(':memory:');
  const bus = options.bus ?? new MemoryBus(log, 5);
  const events: LeadsHarness['events'] = [];
  const recorder =
    options.record === false
      ? null
      : await bus.subscribe(
          leadSubjects,
          { durable: `test-recorder-${randomBytes(4).toString('hex')}` },
          async (m) => void events.push(m),
        );
  // As the profiles compose it: SQLite's transaction and outbox table, or the in-document outbox (MongoDB).
  const units = unitsFor(store, bus, log, { inDocument: options.transactions === false });
  const runtime = await composeLeads({
    store,
    bus,
    log,
    listings: options.listings ?? { find: async () => null },
    clock: options.clock,
    units,
    // As the profiles compose it: MongoDB indexes the members of the search-token array, SQLite does not.
    searchTokenIndex: store.kind === 'mongo',
  });
  const app = await serveBehindGateway({ service: 'leads', log, plugin: leadsApp, runtime, title: 'Leads service' });
  await runtime.start();
  return {
    app,
    runtime,
    bus,
    store,
    events,
    call: forwardedCall(app),
    async close() {
      await app.close();
      await runtime.stop();
      await recorder?.stop();
    },
  };
}

export const admin = identityFor('acc_alice');
export const integration = identityFor('acc_alice', 'integration');
export const agentKey = (agentId: string) => identityFor('acc_alice', 'agent', agentId);
export const otherAccount = identityFor('acc_bob');

/** A listing as the listings service publishes it. */
export function listing(
  id: string,
  over: {
    status?: Listing['status'];
    listPrice?: number;
    postalCode?: string;
    city?: string;
    propertyType?: Listing['propertyDetails']['propertyType'];
    version?: number;
  } = {},
): Listing {
  const at = '2025-01-01T00:00:00.000Z';
  return {
    id,
    status: over.status ?? 'active',
    pricing: { listPrice: over.listPrice ?? 450000, currency: 'USD', pricePerArea: null },
    propertyDetails: { propertyType: over.propertyType ?? 'residential', livingAreaUnits: 'sqft' },
    location: {
      address: {
        street: '1 Main St',
        city: over.city ?? 'Austin',
        stateOrProvince: 'TX',
        postalCode: over.postalCode ?? '78701',
        country: 'US',
      },
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: at,
    version: over.version ?? 1,
    createdAt: at,
    updatedAt: at,
  };
}

export async function publishListing(
  bus: Bus,
  accountId: string,
  l: Listing,
  subject: 'listings.listing.created' | 'listings.listing.updated' = 'listings.listing.created',
): Promise<void> {
  await bus.publish(subject, {
    eventId: randomBytes(8).toString('hex'),
    accountId,
    listingId: l.id,
    version: l.version,
    occurredAt: new Date().toISOString(),
    listing: l,
  });
}

export type SubjectOf<T> = T extends BusMessage<infer S extends Subject> ? S : never;
