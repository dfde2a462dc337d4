import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Bus } from '@estate/bus';
import { MemoryBus } from '@estate/bus/memory.bus';
import type { Lead } from '@estate/contracts/leads';
import type { Media } from '@estate/contracts/media';
import type { DocumentStore } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { forwardedCall, identityFor, serveBehindGateway, unitsFor, type ForwardedCall } from '@estate/testing';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { webhooksApp } from '../src/app';
import { composeWebhooks, type WebhooksOptions, type WebhooksRuntime } from '../src/compose';

export const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export const admin = identityFor('acc_alice');
export const integration = identityFor('acc_alice', 'integration');
export const agent = identityFor('acc_alice', 'agent', 'agt_1');
export const otherAdmin = identityFor('acc_bob');

export const SECRET_KEY = 'test-webhooks-secret-key-0123456789abcdef';

/** What the owning services would answer for resources the events do not carry whole. */
export class ResourceShelf {
  readonly leads = new Map<string, Lead & { accountId: string }>();
  readonly media = new Map<string, Media & { accountId: string }>();

  lead = async (accountId: string, leadId: string): Promise<Lead | null> => {
    const found = this.leads.get(leadId);
    if (!found || found.accountId !== accountId) return null;
    const { accountId: _owner, ...lead } = found;
    return lead;
  };

  mediaItem = async (accountId: string, listingId: string, mediaId: string): Promise<Media | null> => {
    const found = this.media.get(mediaId);
    if (!found || found.accountId !== accountId || found.listingId !== listingId) return null;
    const { accountId: _owner, ...item } = found;
    return item;
  };
}

export interface WebhooksHarness {
  app: FastifyInstance;
  runtime: WebhooksRuntime;
  bus: Bus;
  store: SqliteDocumentStore;
  shelf: ResourceShelf;
  call: ForwardedCall;
  close(): Promise<void>;
}

/**
 * Tests reach private targets (their receiver listens on 127.0.0.1) and retry quickly. A claim lasts longer than
 * an attempt takes on a loaded machine: a replica taking over a delivery still being sent would send it twice.
 * (Tests of a takeover write the claim they take over themselves.)
 */
export const testOptions: Partial<WebhooksOptions> = {
  allowPrivateTargets: true,
  retryScheduleMs: [100, 100, 100],
  leaseMs: 10_000,
  pollMs: 50,
  feedSettleMs: 0,
};

/** A temporary data folder, removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The webhooks service over HTTP with `app.inject()`, on the embedded adapters (SQLite, in-process bus). */
export async function startWebhooks(
  options: {
    store?: SqliteDocumentStore;
    bus?: Bus;
    shelf?: ResourceShelf;
    options?: Partial<WebhooksOptions>;
    clock?: () => Date;
    /** The service's logger (silent unless given). */
    log?: Logger;
  } = {},
): Promise<WebhooksHarness> {
  const store = options.store ?? SqliteDocumentStore.open(':memory:');
  const bus = options.bus ?? new MemoryBus(log, 5);
  const shelf = options.shelf ?? new ResourceShelf();
  const runtime = await composeWebhooks({
    store: store as DocumentStore,
    bus,
    units: unitsFor(store as DocumentStore, bus, options.log ?? log),
    log: options.log ?? log,
    secretKey: SECRET_KEY,
    resources: { lead: shelf.lead, media: shelf.mediaItem },
    clock: options.clock,
    options: { ...testOptions, ...options.options },
    // As the embedded profile composes it over SQLite's unit of work.
    intakeConcurrency: 32,
  });
  const app = await serveBehindGateway({
    service: 'webhooks',
    log,
    plugin: webhooksApp,
    runtime,
    title: 'Webhooks service',
  });
  await runtime.start();
  return {
    app,
    runtime,
    bus,
    store,
    shelf,
    call: forwardedCall(app),
    async close() {
      await app.close();
      await runtime.stop();
    },
  };
}

export const eventId = (): string => randomBytes(8).toString('hex');
