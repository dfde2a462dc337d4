import type { Identity } from '@estate/contracts/accounts';
import { listingCreate, type Listing, type ListingCreate, type ListingPatch } from '@estate/contracts/listings';
import { outboxEntry, type Unit, type UnitOfWork } from '@estate/bus';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { DuplicateKeyError, updateVersioned } from '@estate/store';
import type { Logger } from 'pino';
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
      /** How a listing, its event and its search row are written (docs/decisions/0126-unit-of-work.md). */
      units: UnitOfWork;
      clock: () => Date;
      log: Logger;
      /**
       * The search index: every write's row is a projection of its unit (read-your-writes, SPEC section 5). The
       * index is also kept from the events, which converge whatever happened here (versions make both idempotent).
       */
      search: Pick<ListingIndexRepository, 'upsert' | 'remove'>;
    },
  ) {}

  /** Runs the write and its search row as one unit; `answered`: a client waits for it (not a bulk item). */
  private inStep<T>(
    write: (unit: Unit) => Promise<T>,
    index: (done: T) => Promise<void>,
    answered: boolean,
  ): Promise<T> {
    return this.deps.units.run(async (unit) => {
      const done = await write(unit);
      await unit.project(() => index(done), { readYourWrites: answered });
      return done;
    });
  }

  async create(ctx: RequestContext, input: ListingCreate): Promise<Listing> {
    assertRole(ctx.who, LISTING_WRITERS, 'create listings');
    try {
      return await this.insert(ctx, input, newId('lst'), undefined, true);
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
      write: (current) => this.writePatch(ctx, current, patch, undefined, true),
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
          (unit) => this.deps.listings.tombstone(unit, ctx.who.accountId, id, current.version, event),
          async (done) => {
            if (done) await this.deps.search.remove([{ id, version: current.version + 1 }], { visible: true });
          },
          true,
        );
        if (!removed) return null;
        return { id, deleted: true as const };
      },
    });
  }

  /**
   * Sets or clears the quarantine mark of a listing its feed no longer has (`sourceMissing`: hidden from search,
   * shown again when cleared), with its update event; null when the listing moved on. The caller has checked the role.
   */
  async writeSourceMissing(
    ctx: RequestContext,
    current: Listing,
    mark: NonNullable<Listing['sourceMissing']> | null,
  ): Promise<Listing | null> {
    const now = this.deps.clock().toISOString();
    const next: Listing = {
      ...current,
      sourceMissing: mark,
      version: current.version + 1,
      updatedAt: now,
    };
    const event = outboxEntry(
      'listings.listing.updated',
      { accountId: ctx.who.accountId, listingId: current.id, version: next.version, occurredAt: now, listing: next },
      ctx.requestId,
    );
    const saved = await this.inStep(
      (unit) => this.deps.listings.setSourceMissing(unit, ctx.who.accountId, next, current.version, event),
      async (done) => {
        if (done) await this.deps.search.upsert([{ accountId: ctx.who.accountId, listing: done }], { visible: true });
      },
      false,
    );
    return saved;
  }

  /**
   * Inserts a new listing under `id` with its creation event; a taken id or feed key throws
   * DuplicateKeyError. `applied` records the bulk item it belongs to; `answered`: the client waits for this write
   * (not a bulk item), so it is searchable when it returns. The caller has checked the role.
   */
  async insert(
    ctx: RequestContext,
    input: ListingCreate,
    id: string,
    applied?: AppliedItem[],
    answered = false,
  ): Promise<Listing> {
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
      (unit) =>
        this.deps.listings.insert(
          unit,
          ctx.who.accountId,
          listing,
          externalKey(ctx.who.accountId, input),
          event,
          applied,
        ),
      (done) => this.deps.search.upsert([{ accountId: ctx.who.accountId, listing: done }], { visible: true }),
      answered,
    );
    return listing;
  }

  /**
   * Writes `current` with the patch applied, with its update event, if it is still at its version;
   * null when it moved on. `applied` replaces the bulk items recorded on it; `answered` as for `insert`. The caller
   * has checked the role.
   */
  async writePatch(
    ctx: RequestContext,
    current: Listing,
    patch: ListingPatch,
    applied?: AppliedItem[],
    answered = false,
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
        (unit) =>
          this.deps.listings.replace(
            unit,
            ctx.who.accountId,
            next,
            externalKey(ctx.who.accountId, parsed.data),
            current.version,
            event,
            applied,
          ),
        async (done) => {
          if (done) await this.deps.search.upsert([{ accountId: ctx.who.accountId, listing: done }], { visible: true });
        },
        answered,
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
    return saved;
  }
}
