import type { Identity } from '@estate/contracts/accounts';
import { listingCreate, type Listing, type ListingCreate, type ListingPatch } from '@estate/contracts/listings';
import { outboxEntry, type OutboxRelay } from '@estate/bus';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { DuplicateKeyError, updateVersioned, type Transaction } from '@estate/store';
import {
  buildListing,
  externalKey,
  LISTING_READERS,
  LISTING_WRITERS,
  listedAtFor,
  writableView,
} from './listing.rules';
import type { ListingIndexRepository } from './repositories/listing-index.repository';
import type { AppliedItem, ListingRepository } from './repositories/listing.repository';

/** Creating, reading, changing and deleting single listings, each write with its event in the same document write. */
export class ListingsService {
  constructor(
    private readonly deps: {
      listings: ListingRepository;
      outbox: Pick<OutboxRelay, 'kick'>;
      clock: () => Date;
      /**
       * The search index when it lives in the store and joins its transactions (SQLite): each write
       * changes it in the same commit, so a listing is searchable once its write is acknowledged.
       * The index is also kept from the events, as any other index is.
       */
      inline?: { index: Pick<ListingIndexRepository, 'upsert' | 'remove'>; transaction: Transaction };
    },
  ) {}

  /** Runs the write, with the change of the inline index when there is one, as one commit. */
  private inStep<T>(write: () => Promise<T>, index: (done: T) => Promise<void>): Promise<T> {
    const inline = this.deps.inline;
    if (!inline) return write();
    return inline.transaction(async () => {
      const done = await write();
      await index(done);
      return done;
    });
  }

  async create(ctx: RequestContext, input: ListingCreate): Promise<Listing> {
    assertRole(ctx.who, LISTING_WRITERS, 'create listings');
    try {
      return await this.insert(ctx, input, newId('lst'));
    } catch (err) {
      const key = externalKey(ctx.who.accountId, input);
      if (err instanceof DuplicateKeyError && key) {
        const existing = await this.deps.listings.findByExternalKey(key);
        throw new AppError(
          'listing_exists',
          `A listing with externalId ${input.externalId} from ${input.source} already exists`,
          {
            fields: existing ? { existingId: existing.id } : {},
          },
        );
      }
      throw err;
    }
  }

  async get(who: Identity, id: string): Promise<Listing> {
    assertRole(who, LISTING_READERS, 'read listings');
    const found = await this.deps.listings.get(who.accountId, id);
    if (!found) throw notFound('listing_not_found', 'Listing', id);
    return found;
  }

  /** Applies a JSON merge patch; `ifMatch` (the version the client saw) makes it conditional. */
  async update(ctx: RequestContext, id: string, patch: ListingPatch, ifMatch?: number): Promise<Listing> {
    assertRole(ctx.who, LISTING_WRITERS, 'change listings');
    return updateVersioned({
      what: 'listing',
      ifMatch,
      read: () => this.get(ctx.who, id),
      write: (current) => this.writePatch(ctx, current, patch),
    });
  }

  async remove(ctx: RequestContext, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(ctx.who, LISTING_WRITERS, 'delete listings');
    return updateVersioned({
      what: 'listing',
      ifMatch,
      read: () => this.get(ctx.who, id),
      write: async (current) => {
        const now = this.deps.clock().toISOString();
        const event = outboxEntry(
          'listings.listing.deleted',
          { accountId: ctx.who.accountId, listingId: id, version: current.version + 1, occurredAt: now },
          ctx.requestId,
        );
        const removed = await this.inStep(
          () => this.deps.listings.tombstone(ctx.who.accountId, id, current.version, event),
          async (done) => {
            if (done) await this.deps.inline?.index.remove([{ id, version: current.version + 1 }]);
          },
        );
        if (!removed) return null;
        this.deps.outbox.kick();
        return { id, deleted: true as const };
      },
    });
  }

  /**
   * Inserts a new listing under `id` with its creation event; a taken id or feed key throws
   * DuplicateKeyError. `applied` records the bulk item it belongs to. The caller has checked the role.
   */
  async insert(ctx: RequestContext, input: ListingCreate, id: string, applied?: AppliedItem[]): Promise<Listing> {
    const now = this.deps.clock().toISOString();
    const listing = buildListing(input, {
      id,
      version: 1,
      createdAt: now,
      updatedAt: now,
      listedAt: listedAtFor(input, null, now),
    });
    const event = outboxEntry(
      'listings.listing.created',
      { accountId: ctx.who.accountId, listingId: listing.id, version: 1, occurredAt: now, listing },
      ctx.requestId,
    );
    await this.inStep(
      () =>
        this.deps.listings.insert(ctx.who.accountId, listing, externalKey(ctx.who.accountId, input), event, applied),
      (done) => this.deps.inline!.index.upsert([{ accountId: ctx.who.accountId, listing: done }]),
    );
    this.deps.outbox.kick();
    return listing;
  }

  /**
   * Writes `current` with the patch applied, with its update event, if it is still at its version;
   * null when it moved on. `applied` replaces the bulk items recorded on it. The caller has checked the role.
   */
  async writePatch(
    ctx: RequestContext,
    current: Listing,
    patch: ListingPatch,
    applied?: AppliedItem[],
  ): Promise<Listing | null> {
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
    const event = outboxEntry(
      'listings.listing.updated',
      { accountId: ctx.who.accountId, listingId: current.id, version: next.version, occurredAt: now, listing: next },
      ctx.requestId,
    );
    let saved: Listing | null;
    try {
      saved = await this.inStep(
        () =>
          this.deps.listings.replace(
            ctx.who.accountId,
            next,
            externalKey(ctx.who.accountId, parsed.data),
            current.version,
            event,
            applied,
          ),
        async (done) => {
          if (done) await this.deps.inline!.index.upsert([{ accountId: ctx.who.accountId, listing: done }]);
        },
      );
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        throw new AppError(
          'listing_exists',
          `Another listing already has externalId ${parsed.data.externalId} from ${parsed.data.source}`,
        );
      }
      throw err;
    }
    if (saved) this.deps.outbox.kick();
    return saved;
  }
}
