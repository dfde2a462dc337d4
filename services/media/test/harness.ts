import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlobStore } from '@estate/blobs/fs.blob-store';
import { MemoryBus } from '@estate/bus/memory.bus';
import type { BusMessage } from '@estate/bus';
import type { Identity } from '@estate/contracts/accounts';
import type { Listing } from '@estate/contracts/listings';
import type { Media } from '@estate/contracts/media';
import type { AddressInfo } from 'node:net';
import { callerOf, requireSignedIdentity } from '@estate/platform/auth';
import { notFound } from '@estate/platform/errors';
import { createHttpApp } from '@estate/platform/http';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { asCaller, eventually, identityFor, TEST_SIGNING_SECRET, TEST_TRUST, unitsFor } from '@estate/testing';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { mediaApp } from '../src/app';
import { ListingsClient } from '../src/clients/listings.client';
import { composeMedia, type MediaOptions, type MediaRuntime } from '../src/compose';

export const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export const alice = identityFor('acc_alice');
export const bob = identityFor('acc_bob');
export const agent = identityFor('acc_alice', 'agent', 'agt_1');

export type Part = { name: 'file'; data: Buffer; filename?: string; type?: string } | { name: string; value: string };

/** A multipart/form-data body as a browser or curl would send it. */
export async function multipart(parts: Part[]): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const form = new FormData();
  for (const p of parts) {
    if ('data' in p)
      form.append(p.name, new Blob([p.data], { type: p.type ?? 'image/jpeg' }), p.filename ?? 'photo.jpg');
    else form.append(p.name, p.value);
  }
  const encoded = new Response(form);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

/** A listing as the listings service publishes it. */
export function listingPayload(id: string, version: number): Listing {
  const now = new Date().toISOString();
  return {
    id,
    status: 'active',
    pricing: { listPrice: 450000, currency: 'USD', pricePerArea: null },
    propertyDetails: { propertyType: 'residential', livingAreaUnits: 'sqft' },
    location: {
      address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: now,
    version,
    createdAt: now,
    updatedAt: now,
  };
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

export interface MediaHarness {
  app: FastifyInstance;
  runtime: MediaRuntime;
  store: SqliteDocumentStore;
  blobs: FsBlobStore;
  bus: MemoryBus;
  /** Every `media.media.changed` published, in order (after `runtime.relay.flush()`). */
  changes: BusMessage<'media.media.changed'>[];
  call(who: Identity | null, opts: InjectOptions & { url: string; method: string }): Promise<LightMyRequestResponse>;
  upload(listingId: string, parts: Part[], who?: Identity): Promise<LightMyRequestResponse>;
  /** The listing's shown media (asserts 200). */
  list(listingId: string, who?: Identity): Promise<Media[]>;
  /** Announces a listing the way the listings service does, and returns its id. */
  newListing(accountId?: string): Promise<string>;
  /** A listing the listings service has made but whose event has not reached media yet. */
  newListingUnannounced(accountId?: string): string;
  /** Requests the listings service has answered media so far. */
  listingsAsked(): number;
  /** Waits for the workers to finish every image of the listing. */
  settled(listingId: string): Promise<Media[]>;
  fetchFile(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** Every file in the blob store (its temporary uploads aside). */
  blobFiles(): string[];
  /** Another runtime over the same adapters, not started (e.g. with a clock that runs ahead). */
  runtimeAt(clock: () => Date): Promise<MediaRuntime>;
  close(): Promise<void>;
}

let listingSeq = 0;

/**
 * The listings service as the media service reaches it: `GET /v1/listings/:id` over HTTP with the
 * signed identity, answering the listings the test made to their account and 404 to anyone else.
 */
async function startListingsStandIn(): Promise<{
  url: string;
  owners: Map<string, string>;
  asked: () => number;
  close(): Promise<void>;
}> {
  const owners = new Map<string, string>();
  let asked = 0;
  const app = await createHttpApp({ service: 'listings', logger: log });
  requireSignedIdentity(app, TEST_TRUST);
  app.get<{ Params: { id: string } }>('/v1/listings/:id', async (request) => {
    asked++;
    const { id } = request.params;
    if (owners.get(id) !== callerOf(request).accountId) throw notFound('listing_not_found', 'Listing', id);
    return listingPayload(id, 1);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    owners,
    asked: () => asked,
    close: () => app.close(),
  };
}

/** The media service over HTTP with `app.inject()`: SQLite in memory, MemoryBus, files in a temporary directory. */
export async function startMedia(options: Partial<MediaOptions> = { workers: 1 }): Promise<MediaHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'media-int-'));
  const bus = new MemoryBus(log);
  const changes: MediaHarness['changes'] = [];
  await bus.subscribe(['media.media.changed'], { durable: 'test' }, async (m) => {
    changes.push(m);
  });
  const store = SqliteDocumentStore.open(':memory:');
  const blobs = await FsBlobStore.open(join(dir, 'blobs'));
  const standIn = await startListingsStandIn();
  const listings = new ListingsClient({ listingsUrl: standIn.url, signingSecret: TEST_SIGNING_SECRET });
  const units = unitsFor(store, bus, log);
  const runtime = await composeMedia({ store, bus, units, queue: 'in-process', blobs, listings, log, options });
  const app = await createHttpApp({ service: 'media', logger: log });
  requireSignedIdentity(app, TEST_TRUST);
  await app.register(mediaApp, { runtime });
  await app.ready();
  await runtime.start();

  const call: MediaHarness['call'] = (who, opts) =>
    app.inject({
      ...opts,
      headers: { ...(who ? asCaller(who, opts.method, opts.url, opts.payload) : {}), ...(opts.headers ?? {}) },
    });
  const list: MediaHarness['list'] = async (listingId, who = alice) => {
    const res = await call(who, { method: 'GET', url: `/v1/listings/${listingId}/media?limit=100` });
    expect(res.statusCode).toBe(200);
    return res.json().items;
  };
  return {
    app,
    runtime,
    store,
    blobs,
    bus,
    changes,
    call,
    list,
    upload: async (listingId, parts, who = alice) =>
      call(who, { method: 'POST', url: `/v1/listings/${listingId}/media`, ...(await multipart(parts)) }),
    newListingUnannounced(accountId = 'acc_alice') {
      const id = `lst_test${++listingSeq}`;
      standIn.owners.set(id, accountId);
      return id;
    },
    listingsAsked: () => standIn.asked(),
    async newListing(accountId = 'acc_alice') {
      const id = `lst_test${++listingSeq}`;
      standIn.owners.set(id, accountId);
      const occurredAt = new Date().toISOString();
      await bus.publish('listings.listing.created', {
        eventId: `created-${id}`,
        accountId,
        listingId: id,
        version: 1,
        occurredAt,
        listing: listingPayload(id, 1),
      });
      return id;
    },
    // Generous: CPUs may be shared with other suites.
    settled: (listingId) =>
      eventually(
        async () => {
          const items = await list(listingId);
          if (items.some((m) => m.status === 'processing')) throw new Error('images still processing');
          return items;
        },
        // Renders share the CPU with everything else on a busy machine.
        { timeoutMs: 60_000, intervalMs: 25 },
      ),
    fetchFile: (url, headers = {}) => app.inject({ method: 'GET', url, headers }),
    blobFiles: () => filesUnder(join(dir, 'blobs')).filter((f) => !f.includes(`${join(dir, 'blobs', 'tmp')}`)),
    runtimeAt: (clock) => composeMedia({ store, bus, units, queue: 'in-process', blobs, listings, log, clock }),
    async close() {
      await app.close();
      await runtime.stop();
      await bus.close();
      await standIn.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
