import { findOwned, ownedBy, storable } from '@estate/store';
import type { Listing, ListingMedia } from '@estate/contracts/listings';
import { notDeleted, updateWithOutbox, withoutOutbox, type OutboxDoc, type OutboxEntry, type Unit } from '@estate/bus';
import {
  updateVersioned,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
} from '@estate/store';
import type { IndexedListing } from '@estate/search';

/**
 * A bulk item that wrote this listing (`<jobId>#<index>`), kept on the listing itself so that the
 * write and the proof of it are one atomic document write: a job redelivered after a crash
 * recognises the items it already applied (see docs/decisions/0030).
 */
export interface AppliedItem {
  key: string;
  action: 'created' | 'updated';
}

/** A listing with the bulk items already applied to it. */
export interface ListingWithApplied {
  listing: Listing;
  applied: AppliedItem[];
}

/** A listing as stored: the public shape plus the owning account, the unique feed key and the bulk items applied. */
export type ListingDoc = Listing &
  OutboxDoc & { accountId: string; externalKey?: string; _applied?: AppliedItem[]; _mediaRevision?: number };

export const LISTINGS_COLLECTION = 'listings';

/** A listing that changes this often while a media summary is applied is left to the event's redelivery. */
const MEDIA_SUMMARY_ATTEMPTS = 10;

const FIELDS_REPLACED_ON_UPDATE = [
  'externalId',
  'source',
  'mlsNumber',
  'externalKey',
  'status',
  'pricing',
  'propertyDetails',
  'location',
  'listedAt',
  // A write of the listing's fields (its feed's record seen again, or an edit) shows a quarantined listing again.
  'sourceMissing',
] as const;

function toListing(doc: ListingDoc): Listing {
  const { accountId, externalKey, _applied, _mediaRevision, ...rest } = withoutOutbox(doc);
  // Stored before the media summary had photosChangedAt: null until the photos next change (decision 0105).
  const media = rest.media ? { ...rest.media, photosChangedAt: rest.media.photosChangedAt ?? null } : rest.media;
  return { ...rest, media, listedAt: rest.listedAt ?? null, sourceMissing: rest.sourceMissing ?? null } as Listing;
}

export class ListingRepository {
  private constructor(readonly collection: DocumentCollection<ListingDoc>) {}

  static async open(store: DocumentStore): Promise<ListingRepository> {
    const col = await store.collection<ListingDoc>(LISTINGS_COLLECTION, [
      { fields: { externalKey: 1 }, unique: true, sparse: true },
      { fields: { accountId: 1, updatedAt: 1 } },
      { fields: { _outboxPending: 1 } },
    ]);
    return new ListingRepository(col);
  }

  async insert(
    unit: Unit,
    accountId: string,
    listing: Listing,
    externalKey: string | undefined,
    event: OutboxEntry,
    applied?: AppliedItem[],
  ): Promise<Listing> {
    await unit.insert(
      this.collection,
      storable({ ...listing, accountId, externalKey, _applied: applied }) as ListingDoc,
      [event],
    );
    return listing;
  }

  async get(accountId: string, id: string): Promise<Listing | null> {
    const doc = await findOwned(this.collection, id, accountId);
    return doc ? toListing(doc) : null;
  }

  /** The listing with the bulk items already applied to it, by id or by feed key. */
  async findWithApplied(
    accountId: string,
    by: { id: string } | { externalKey: string },
  ): Promise<ListingWithApplied | null> {
    // By the primary key or the unique feed key (a tombstone has none): one index probe either way.
    const doc = ownedBy(await this.collection.findOne(by), accountId);
    return doc ? { listing: toListing(doc), applied: doc._applied ?? [] } : null;
  }

  async findByExternalKey(externalKey: string): Promise<Listing | null> {
    const doc = await this.collection.findOne({ externalKey });
    return doc && !doc._deleted ? toListing(doc) : null;
  }

  /**
   * Replaces the writable fields if the stored version is still `expectedVersion`; null otherwise.
   * `applied`, when given, replaces the list of bulk items applied (the version check keeps it exact).
   */
  async replace(
    unit: Unit,
    accountId: string,
    listing: Listing,
    externalKey: string | undefined,
    expectedVersion: number,
    event: OutboxEntry,
    applied?: AppliedItem[],
  ): Promise<Listing | null> {
    const next = storable({ ...listing, externalKey }) as Record<string, unknown>;
    const $set: Record<string, unknown> = {
      version: listing.version,
      updatedAt: listing.updatedAt,
      ...(applied ? { _applied: applied } : {}),
    };
    const $unset: Record<string, true> = {};
    for (const field of FIELDS_REPLACED_ON_UPDATE) {
      if (next[field] === undefined) $unset[field] = true;
      else $set[field] = next[field];
    }
    const doc = await unit.update(
      this.collection,
      { id: listing.id, accountId, version: expectedVersion, ...notDeleted },
      { $set, ...(Object.keys($unset).length ? { $unset } : {}) },
      [event],
    );
    return doc ? toListing(doc) : null;
  }

  /**
   * Sets (or, with `next.sourceMissing` absent, clears) the feed quarantine mark if the stored version is still
   * `expectedVersion`, with its update event; null otherwise.
   */
  async setSourceMissing(
    unit: Unit,
    accountId: string,
    next: Listing,
    expectedVersion: number,
    event: OutboxEntry,
  ): Promise<Listing | null> {
    const change = next.sourceMissing
      ? { $set: { sourceMissing: next.sourceMissing, version: next.version, updatedAt: next.updatedAt } }
      : { $set: { version: next.version, updatedAt: next.updatedAt }, $unset: { sourceMissing: true as const } };
    const doc = await unit.update(
      this.collection,
      { id: next.id, accountId, version: expectedVersion, ...notDeleted },
      change,
      [event],
    );
    return doc ? toListing(doc) : null;
  }

  /**
   * The account's listings of one feed source, in feed key order and batches (a range of the unique feed key's
   * index: `accountId|source|externalId`).
   */
  async *ofSource(accountId: string, source: string, batchSize = 1000): AsyncIterable<Listing[]> {
    const prefix = `${accountId}|${source}|`;
    const end = `${accountId}|${source}}`; // '}' sorts right after '|'
    let after: string | undefined;
    for (;;) {
      const docs = await this.collection.find(
        { externalKey: { $gt: after ?? prefix, $lt: end }, ...notDeleted },
        { sort: { externalKey: 1 }, limit: batchSize },
      );
      if (docs.length === 0) return;
      yield docs.map(toListing);
      after = docs[docs.length - 1].externalKey;
    }
  }

  /** Removes the listing with its event (where it must outlive the write, a tombstone that frees its feed key). */
  async tombstone(
    unit: Unit,
    accountId: string,
    id: string,
    expectedVersion: number,
    event: OutboxEntry,
  ): Promise<boolean> {
    return unit.remove(
      this.collection,
      { id, accountId, version: expectedVersion, ...notDeleted },
      { $set: { version: expectedVersion + 1 }, $unset: { externalKey: true } },
      [event],
    );
  }

  /**
   * Sets the media summary the media service published at media revision `revision`, unless the
   * listing already shows that revision or a newer one (events can arrive twice or late). Bumps
   * the version, with the event `eventFor` builds from the new listing in the same write. Null when
   * the listing is gone or the summary is not newer.
   */
  async setMediaSummary(
    accountId: string,
    id: string,
    summary: (current: Listing) => ListingMedia,
    revision: number,
    now: string,
    eventFor: (next: Listing) => OutboxEntry,
  ): Promise<Listing | null> {
    const outcome = await updateVersioned<ListingDoc | null, { applied: Listing | null }>({
      what: 'listing',
      attempts: MEDIA_SUMMARY_ATTEMPTS,
      read: () => findOwned(this.collection, id, accountId),
      versionOf: (doc) => doc?.version ?? 0,
      write: async (doc) => {
        if (!doc || (doc._mediaRevision ?? 0) >= revision) return { applied: null };
        const current = toListing(doc);
        const media = summary(current);
        const next: Listing = { ...current, media, version: doc.version + 1, updatedAt: now };
        const saved = await this.collection.updateOne(
          { id, accountId, version: doc.version, ...notDeleted },
          updateWithOutbox(
            { $set: { media, _mediaRevision: revision, version: next.version, updatedAt: now } },
            eventFor(next),
          ),
        );
        return saved ? { applied: next } : null;
      },
    });
    return outcome.applied;
  }

  async find(filter: Filter, options: FindOptions): Promise<Listing[]> {
    return (await this.collection.find({ ...filter, ...notDeleted }, options)).map(toListing);
  }

  async count(filter: Filter): Promise<number> {
    return this.collection.count({ ...filter, ...notDeleted });
  }

  /** Every listing with its account, in id order and batches (keyset: stable while listings change). */
  async *scan(batchSize = 1000): AsyncIterable<IndexedListing[]> {
    let after: string | undefined;
    for (;;) {
      const docs = await this.collection.find(
        { ...(after ? { id: { $gt: after } } : {}), ...notDeleted },
        { sort: { id: 1 }, limit: batchSize },
      );
      if (docs.length === 0) return;
      yield docs.map((doc) => ({ accountId: doc.accountId, listing: toListing(doc) }));
      after = docs[docs.length - 1].id;
    }
  }

  /** Which of these ids are stored listings. */
  async existingIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    return new Set((await this.collection.find({ id: { $in: ids }, ...notDeleted })).map((doc) => doc.id));
  }
}
