import { createHash, randomBytes } from 'node:crypto';
import type { Identity } from '@estate/contracts/accounts';
import { listingCreate, listingPatch, type Listing, type ListingCreate, type ListingPage, type ListingPatch, type ListingSearchQuery } from '@estate/contracts/listings';
import { outboxEntry, type OutboxRelay } from '@estate/bus';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { DuplicateKeyError } from '@estate/store';
import { SearchIndexUnavailable, type ListingIndex } from '@estate/search';
import type { Logger } from 'pino';
import { buildListing, externalKey, listedAtFor, writableView } from './listing.rules';
import { cursorOf, toIndexSearch } from './search/search-query';
import type { AppliedItem, ListingRepository } from './repositories/listing.repository';

export interface ListingsDeps {
  listings: ListingRepository;
  index: ListingIndex;
  outbox: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
}

export interface WriteContext {
  who: Identity;
  requestId?: string;
}

const WRITERS = ['admin', 'integration'] as const;
const READERS = ['admin', 'integration', 'agent'] as const;
const MAX_CAS_RETRIES = 5;


export function newListingId(): string {
  return `lst_${randomBytes(12).toString('base64url')}`;
}

/** Which bulk job item a write belongs to. */
export interface BulkItemMark {
  jobId: string;
  index: number;
}

export interface UpsertOutcome {
  id: string;
  action: AppliedItem['action'];
}

/**
 * Bulk items remembered per listing: enough to recognise every write a crashed job had not
 * recorded yet (the worker never has more than this many items started and unrecorded).
 */
export const APPLIED_ITEMS_KEPT = 20;

const appliedKey = (mark: BulkItemMark): string => `${mark.jobId}#${mark.index}`;

/**
 * The id a bulk item creates its listing under, derived from the job and the index: a create
 * repeated after a crash finds its own first attempt instead of making a second listing.
 * Same shape as {@link newListingId}, and as unguessable as the job id.
 */
export function bulkListingId(mark: BulkItemMark): string {
  return `lst_${createHash('sha256').update(`bulk:${appliedKey(mark)}`).digest().subarray(0, 12).toString('base64url')}`;
}

export class ListingsService {
  constructor(private readonly deps: ListingsDeps) {}

  async create(ctx: WriteContext, input: ListingCreate): Promise<Listing> {
    assertRole(ctx.who, WRITERS, 'create listings');
    try {
      return await this.insertListing(ctx, input, newListingId());
    } catch (err) {
      const key = externalKey(ctx.who.accountId, input);
      if (err instanceof DuplicateKeyError && key) {
        const existing = await this.deps.listings.findByExternalKey(key);
        throw new AppError('listing_exists', `A listing with externalId ${input.externalId} from ${input.source} already exists`, {
          fields: existing ? { existingId: existing.id } : {},
        });
      }
      throw err;
    }
  }

  /** Inserts a new listing with its creation event; a taken id or feed key throws DuplicateKeyError. */
  private async insertListing(ctx: WriteContext, input: ListingCreate, id: string, applied?: AppliedItem[]): Promise<Listing> {
    const now = this.deps.clock().toISOString();
    const listing = buildListing(input, { id, version: 1, createdAt: now, updatedAt: now, listedAt: listedAtFor(input, null, now) });
    const event = outboxEntry('listings.listing.created', { accountId: ctx.who.accountId, listingId: listing.id, version: 1, occurredAt: now, listing }, ctx.requestId);
    await this.deps.listings.insert(ctx.who.accountId, listing, externalKey(ctx.who.accountId, input), event, applied);
    this.deps.outbox.kick();
    return listing;
  }

  async get(who: Identity, id: string): Promise<Listing> {
    assertRole(who, READERS, 'read listings');
    const found = await this.deps.listings.get(who.accountId, id);
    if (!found) throw notFound('listing_not_found', 'Listing', id);
    return found;
  }

  /** Applies a JSON merge patch; `ifMatch` (the version the client saw) makes it conditional. */
  async update(ctx: WriteContext, id: string, patch: ListingPatch, ifMatch?: number): Promise<Listing> {
    assertRole(ctx.who, WRITERS, 'change listings');
    for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
      const current = await this.get(ctx.who, id);
      if (ifMatch !== undefined && ifMatch !== current.version) {
        throw new AppError('version_mismatch', `The listing is at version ${current.version}, not ${ifMatch}`, { fields: { currentVersion: current.version } });
      }
      const saved = await this.writePatch(ctx, current, patch);
      if (saved) return saved;
      if (ifMatch !== undefined) throw new AppError('version_mismatch', 'The listing changed while this update was applied');
    }
    throw new AppError('conflict', 'The listing is changing too often to apply this update; retry');
  }

  /** Writes `current` with the patch applied if it is still at its version; null when it moved on. */
  private async writePatch(ctx: WriteContext, current: Listing, patch: ListingPatch, applied?: AppliedItem[]): Promise<Listing | null> {
    const parsed = listingCreate.safeParse(applyMergePatch(writableView(current), patch));
    if (!parsed.success) throw validationError(parsed.error, [], 'The listing would not be valid after this change');
    const now = this.deps.clock().toISOString();
    const next = buildListing(parsed.data, {
      id: current.id,
      version: current.version + 1,
      createdAt: current.createdAt,
      updatedAt: now,
      listedAt: listedAtFor(parsed.data, current.listedAt, now),
      media: current.media,
    });
    const event = outboxEntry('listings.listing.updated', { accountId: ctx.who.accountId, listingId: current.id, version: next.version, occurredAt: now, listing: next }, ctx.requestId);
    let saved: Listing | null;
    try {
      saved = await this.deps.listings.replace(ctx.who.accountId, next, externalKey(ctx.who.accountId, parsed.data), current.version, event, applied);
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        throw new AppError('listing_exists', `Another listing already has externalId ${parsed.data.externalId} from ${parsed.data.source}`);
      }
      throw err;
    }
    if (saved) this.deps.outbox.kick();
    return saved;
  }

  /**
   * One bulk item: a merge patch of the listing it names (by `id`, or by `externalId` + `source`
   * when the account already has that key), otherwise a create. The same writes and events as
   * `create`/`update`, applied at most once per `mark` even when a crashed job is run again: the
   * listing records the item in the same write, and a repeated create reuses its derived id.
   * Throws an AppError (validation, not found, conflict) for an item that cannot be applied.
   */
  async upsert(ctx: WriteContext, item: Record<string, unknown>, mark: BulkItemMark): Promise<UpsertOutcome> {
    assertRole(ctx.who, WRITERS, 'write listings');
    const { id, ...fields } = item;
    if (id !== undefined && (typeof id !== 'string' || id.length < 1 || id.length > 64)) {
      throw new AppError('validation_failed', 'The item is not valid', { errors: [{ path: 'id', message: 'must be the id of a listing (1 to 64 characters)' }] });
    }
    const key = appliedKey(mark);
    // A whole listing without an id is created first: the unique keys (derived id, feed key) tell
    // whether it exists, where a lookup that finds nothing would scan the collection on FerretDB.
    const asCreate = id === undefined ? listingCreate.safeParse(fields) : undefined;
    for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
      if (asCreate?.success) {
        try {
          const created = await this.insertListing(ctx, asCreate.data, bulkListingId(mark), [{ key, action: 'created' }]);
          return { id: created.id, action: 'created' };
        } catch (err) {
          // The feed key is taken (an update), or this very item was created by an earlier attempt.
          if (!(err instanceof DuplicateKeyError)) throw err;
        }
      }
      const target = await this.upsertTarget(ctx.who.accountId, id, fields, mark);
      if (!target) {
        if (id !== undefined || !asCreate) throw notFound('listing_not_found', 'Listing', String(id));
        // What took the key a moment ago is gone again: create once more.
        if (asCreate.success) continue;
        throw validationError(asCreate.error, [], 'The listing is not valid');
      }
      const done = target.applied.find((a) => a.key === key);
      if (done) return { id: target.listing.id, action: done.action };
      const patch = listingPatch.safeParse(fields);
      if (!patch.success) throw validationError(patch.error, [], 'The item is not a valid merge patch of the listing');
      const saved = await this.writePatch(ctx, target.listing, patch.data, [...target.applied.slice(-(APPLIED_ITEMS_KEPT - 1)), { key, action: 'updated' }]);
      if (saved) return { id: saved.id, action: 'updated' };
    }
    throw new AppError('conflict', 'The listing kept changing while this item was applied');
  }

  /** The listing a bulk item writes to, if it exists: named by id, found by feed key, or created by this very item before. */
  private async upsertTarget(accountId: string, id: string | undefined, fields: Record<string, unknown>, mark: BulkItemMark) {
    if (id !== undefined) return this.deps.listings.findWithApplied(accountId, { id });
    const { externalId, source } = fields;
    // Trimmed as the contract stores them, so " MLS-1" finds "MLS-1".
    const key = typeof externalId === 'string' && typeof source === 'string' ? externalKey(accountId, { externalId: externalId.trim(), source: source.trim() }) : undefined;
    const byKey = key ? await this.deps.listings.findWithApplied(accountId, { externalKey: key }) : null;
    return byKey ?? this.deps.listings.findWithApplied(accountId, { id: bulkListingId(mark) });
  }

  async remove(ctx: WriteContext, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(ctx.who, WRITERS, 'delete listings');
    for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
      const current = await this.get(ctx.who, id);
      if (ifMatch !== undefined && ifMatch !== current.version) {
        throw new AppError('version_mismatch', `The listing is at version ${current.version}, not ${ifMatch}`);
      }
      const now = this.deps.clock().toISOString();
      const event = outboxEntry('listings.listing.deleted', { accountId: ctx.who.accountId, listingId: id, version: current.version + 1, occurredAt: now }, ctx.requestId);
      if (await this.deps.listings.tombstone(ctx.who.accountId, id, current.version, event)) {
        this.deps.outbox.kick();
        return { id, deleted: true };
      }
    }
    throw new AppError('conflict', 'The listing is changing too often to delete it; retry');
  }

  /** Search served by the index (see docs/decisions/0010); `indexMs` is the index's own time, for Server-Timing. */
  async search(who: Identity, query: ListingSearchQuery): Promise<{ page: ListingPage; indexMs: number }> {
    assertRole(who, READERS, 'read listings');
    const search = toIndexSearch(who.accountId, query);
    let result;
    try {
      result = await this.deps.index.search(search);
    } catch (err) {
      if (err instanceof SearchIndexUnavailable) throw new AppError('service_unavailable', 'Search is unavailable for a moment; retry shortly', { cause: err, headers: { 'retry-after': '1' } });
      throw err;
    }
    const page: ListingPage = { items: result.items, nextCursor: cursorOf(result.next, search.sort), total: result.total };
    if (search.facets.length > 0) page.facets = result.facets;
    return { page, indexMs: result.tookMs };
  }

}
