import { isDeepStrictEqual } from 'node:util';
import {
  listingCreate,
  listingPatch,
  type Listing,
  type ListingCreate,
  type ListingPatch,
} from '@estate/contracts/listings';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { DuplicateKeyError, updateVersioned } from '@estate/store';
import { APPLIED_ITEMS_KEPT, appliedKey, bulkListingId, type BulkItemMark } from './bulk.rules';
import { externalKey, LISTING_WRITERS, writableView } from './listing.rules';
import type { ListingsService } from './listings.service';
import type { AppliedItem, ListingRepository, ListingWithApplied } from './repositories/listing.repository';

export interface UpsertOutcome {
  id: string;
  action: AppliedItem['action'];
}

/** A feed record's outcome: also `unchanged` (not written). */
export interface RecordOutcome {
  id: string;
  action: AppliedItem['action'] | 'unchanged';
}

/** What an item would do, written nothing (a feed's dry run). */
export type UpsertPreview =
  { action: 'create' } | { action: 'update'; id: string; fields: string[] } | { action: 'unchanged'; id: string };

const withoutNulls = (value: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [
        k,
        v && typeof v === 'object' && !Array.isArray(v) ? withoutNulls(v as Record<string, unknown>) : v,
      ]),
  );

/** The listing's writable fields after the patch, or null when they would be exactly as they are. */
function changedFields(current: Listing, patch: ListingPatch): string[] {
  const before = listingCreate.parse(writableView(current)) as Record<string, unknown>;
  const after = listingCreate.safeParse(applyMergePatch(writableView(current), patch));
  if (!after.success) throw validationError(after.error, [], 'The listing would not be valid after this change');
  const changed: string[] = [];
  const walk = (a: unknown, b: unknown, path: string): void => {
    const objects = [a, b].every((v) => v && typeof v === 'object' && !Array.isArray(v));
    if (!objects) {
      if (!isDeepStrictEqual(a, b)) changed.push(path);
      return;
    }
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    for (const key of new Set([...Object.keys(x), ...Object.keys(y)]))
      walk(x[key], y[key], path ? `${path}.${key}` : key);
  };
  walk(before, after.data, '');
  return changed;
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
  upsert(ctx: RequestContext, item: Record<string, unknown>, mark: BulkItemMark): Promise<UpsertOutcome> {
    // Only a feed record can come out unchanged.
    return this.write(ctx, item, mark, {}) as Promise<UpsertOutcome>;
  }

  /**
   * A whole record from a feed, as `upsert`: on create its nulls are absent fields, and an update that changes
   * nothing is not written (no version, no event).
   */
  upsertRecord(ctx: RequestContext, item: Record<string, unknown>, mark: BulkItemMark): Promise<RecordOutcome> {
    return this.write(ctx, item, mark, { record: true });
  }

  private async write(
    ctx: RequestContext,
    item: Record<string, unknown>,
    mark: BulkItemMark,
    options: { record?: boolean },
  ): Promise<RecordOutcome> {
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
    const asCreate =
      id === undefined ? listingCreate.safeParse(options.record ? withoutNulls(fields) : fields) : undefined;
    const created = asCreate?.success ? await this.create(ctx, asCreate.data, mark) : null;
    if (created) return created;
    return updateVersioned<ListingWithApplied | null, RecordOutcome>({
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
        // A quarantined listing whose record is seen again is written (unchanged or not): that shows it again.
        if (options.record && !target.listing.sourceMissing && changedFields(target.listing, patch.data).length === 0)
          return { id: target.listing.id, action: 'unchanged' };
        const applied = [...target.applied.slice(-(APPLIED_ITEMS_KEPT - 1)), { key, action: 'updated' as const }];
        const saved = await this.deps.writes.writePatch(ctx, target.listing, patch.data, applied);
        return saved ? { id: saved.id, action: 'updated' } : null;
      },
    });
  }

  /** What `upsert` would do with a feed record, writing nothing; throws the record's error as `upsert` would. */
  async preview(ctx: RequestContext, item: Record<string, unknown>): Promise<UpsertPreview> {
    assertRole(ctx.who, LISTING_WRITERS, 'write listings');
    const target = await this.targetOf(ctx.who.accountId, undefined, item, { jobId: '', index: -1 });
    if (!target) {
      const create = listingCreate.safeParse(withoutNulls(item));
      if (!create.success) throw validationError(create.error, [], 'The listing is not valid');
      return { action: 'create' };
    }
    const patch = listingPatch.safeParse(item);
    if (!patch.success) throw validationError(patch.error, [], 'The item is not a valid merge patch of the listing');
    const fields = [
      ...changedFields(target.listing, patch.data),
      ...(target.listing.sourceMissing ? ['sourceMissing'] : []),
    ];
    return fields.length === 0
      ? { action: 'unchanged', id: target.listing.id }
      : { action: 'update', id: target.listing.id, fields };
  }

  /** The listing a feed record with this key (`externalId`) and source wrote, if there is one. */
  async findRecord(ctx: RequestContext, externalId: string, source: string): Promise<Listing | null> {
    assertRole(ctx.who, LISTING_WRITERS, 'write listings');
    const target = await this.targetOf(ctx.who.accountId, undefined, { externalId, source }, { jobId: '', index: -1 });
    return target?.listing ?? null;
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
