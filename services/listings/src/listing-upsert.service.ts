import { listingCreate, listingPatch, type ListingCreate } from '@estate/contracts/listings';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { DuplicateKeyError, updateVersioned } from '@estate/store';
import { APPLIED_ITEMS_KEPT, appliedKey, bulkListingId, type BulkItemMark } from './bulk.rules';
import { externalKey, LISTING_WRITERS } from './listing.rules';
import type { ListingsService } from './listings.service';
import type { AppliedItem, ListingRepository, ListingWithApplied } from './repositories/listing.repository';

export interface UpsertOutcome {
  id: string;
  action: AppliedItem['action'];
}

/**
 * One bulk item: a merge patch of the listing it names (by `id`, or by `externalId` + `source`
 * when the account already has that key), otherwise a create. The same writes and events as
 * single creates and updates, applied at most once per item even when a crashed job is run again:
 * the listing records the item in the same write, and a repeated create reuses its derived id.
 */
export class ListingUpsertService {
  constructor(
    private readonly deps: { writes: Pick<ListingsService, 'insert' | 'writePatch'>; listings: ListingRepository },
  ) {}

  /** Applies the item; throws an AppError (validation, not found, conflict) for an item that cannot be applied. */
  async upsert(ctx: RequestContext, item: Record<string, unknown>, mark: BulkItemMark): Promise<UpsertOutcome> {
    assertRole(ctx.who, LISTING_WRITERS, 'write listings');
    const { id, ...fields } = item;
    if (id !== undefined && (typeof id !== 'string' || id.length < 1 || id.length > 64)) {
      throw new AppError('validation_failed', 'The item is not valid', {
        errors: [{ path: 'id', message: 'must be the id of a listing (1 to 64 characters)' }],
      });
    }
    const key = appliedKey(mark);
    // A whole listing without an id is created first: the unique keys (derived id, feed key) tell
    // whether it exists, where a lookup that finds nothing would scan the collection on FerretDB.
    const asCreate = id === undefined ? listingCreate.safeParse(fields) : undefined;
    const created = asCreate?.success ? await this.create(ctx, asCreate.data, mark) : null;
    if (created) return created;
    return updateVersioned<ListingWithApplied | null, UpsertOutcome>({
      what: 'listing',
      read: () => this.targetOf(ctx.who.accountId, id, fields, mark),
      versionOf: (target) => target?.listing.version ?? 0,
      write: async (target) => {
        if (!target) {
          if (id !== undefined || !asCreate) throw notFound('listing_not_found', 'Listing', String(id));
          if (!asCreate.success) throw validationError(asCreate.error, [], 'The listing is not valid');
          // What took the key a moment ago is gone again: create once more.
          return this.create(ctx, asCreate.data, mark);
        }
        const done = target.applied.find((a) => a.key === key);
        if (done) return { id: target.listing.id, action: done.action };
        const patch = listingPatch.safeParse(fields);
        if (!patch.success)
          throw validationError(patch.error, [], 'The item is not a valid merge patch of the listing');
        const applied = [...target.applied.slice(-(APPLIED_ITEMS_KEPT - 1)), { key, action: 'updated' as const }];
        const saved = await this.deps.writes.writePatch(ctx, target.listing, patch.data, applied);
        return saved ? { id: saved.id, action: 'updated' } : null;
      },
    });
  }

  /** Creates the item's listing under its derived id; null when that id or the feed key is taken. */
  private async create(ctx: RequestContext, input: ListingCreate, mark: BulkItemMark): Promise<UpsertOutcome | null> {
    try {
      const created = await this.deps.writes.insert(ctx, input, bulkListingId(mark), [
        { key: appliedKey(mark), action: 'created' },
      ]);
      return { id: created.id, action: 'created' };
    } catch (err) {
      // The feed key is taken (an update), or this very item was created by an earlier attempt.
      if (err instanceof DuplicateKeyError) return null;
      throw err;
    }
  }

  /** The listing a bulk item writes to, if it exists: named by id, found by feed key, or created by this very item before. */
  private async targetOf(
    accountId: string,
    id: unknown,
    fields: Record<string, unknown>,
    mark: BulkItemMark,
  ): Promise<ListingWithApplied | null> {
    if (typeof id === 'string') return this.deps.listings.findWithApplied(accountId, { id });
    const { externalId, source } = fields;
    // Trimmed as the contract stores them, so " MLS-1" finds "MLS-1".
    const key =
      typeof externalId === 'string' && typeof source === 'string'
        ? externalKey(accountId, { externalId: externalId.trim(), source: source.trim() })
        : undefined;
    const byKey = key ? await this.deps.listings.findWithApplied(accountId, { externalKey: key }) : null;
    return byKey ?? this.deps.listings.findWithApplied(accountId, { id: bulkListingId(mark) });
  }
}
