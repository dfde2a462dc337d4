import type { Listing } from '@estate/contracts/listings';
import { notDeleted, updateWithOutbox, withOutbox, withoutOutbox, type OutboxDoc, type OutboxEntry } from '@estate/bus';
import type { DocumentCollection, DocumentStore, Filter, FindOptions } from '@estate/store';

/** A listing as stored: the public shape plus the owning account and the unique feed key. */
export type ListingDoc = Listing & OutboxDoc & { accountId: string; externalKey?: string };

export const LISTINGS_COLLECTION = 'listings';

const FIELDS_REPLACED_ON_UPDATE = ['externalId', 'source', 'mlsNumber', 'externalKey', 'status', 'pricing', 'propertyDetails', 'location', 'listedAt'] as const;

function toListing(doc: ListingDoc): Listing {
  const { accountId, externalKey, ...rest } = withoutOutbox(doc);
  return { ...rest, listedAt: rest.listedAt ?? null } as Listing;
}

/** Drops nulls so optional fields are absent in storage (both engines sort and match absence alike). */
function storable<T extends object>(doc: T): T {
  return Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null && v !== undefined)) as T;
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

  async insert(accountId: string, listing: Listing, externalKey: string | undefined, event: OutboxEntry): Promise<Listing> {
    await this.collection.insertOne(storable({ ...listing, accountId, externalKey, ...withOutbox(event) }) as ListingDoc);
    return listing;
  }

  async get(accountId: string, id: string): Promise<Listing | null> {
    const doc = await this.collection.findOne({ id, accountId, ...notDeleted });
    return doc ? toListing(doc) : null;
  }

  async findByExternalKey(externalKey: string): Promise<Listing | null> {
    const doc = await this.collection.findOne({ externalKey, ...notDeleted });
    return doc ? toListing(doc) : null;
  }

  /** Replaces the writable fields if the stored version is still `expectedVersion`; null otherwise. */
  async replace(accountId: string, listing: Listing, externalKey: string | undefined, expectedVersion: number, event: OutboxEntry): Promise<Listing | null> {
    const next = storable({ ...listing, externalKey }) as Record<string, unknown>;
    const $set: Record<string, unknown> = { version: listing.version, updatedAt: listing.updatedAt };
    const $unset: Record<string, true> = {};
    for (const field of FIELDS_REPLACED_ON_UPDATE) {
      if (next[field] === undefined) $unset[field] = true;
      else $set[field] = next[field];
    }
    const doc = await this.collection.updateOne(
      { id: listing.id, accountId, version: expectedVersion, ...notDeleted },
      updateWithOutbox({ $set, ...(Object.keys($unset).length ? { $unset } : {}) }, event),
    );
    return doc ? toListing(doc) : null;
  }

  /** Marks the listing deleted (a tombstone the outbox relay removes once the event is out). */
  async tombstone(accountId: string, id: string, expectedVersion: number, event: OutboxEntry): Promise<boolean> {
    const doc = await this.collection.updateOne(
      { id, accountId, version: expectedVersion, ...notDeleted },
      updateWithOutbox({ $set: { _deleted: true, version: expectedVersion + 1 }, $unset: { externalKey: true } }, event),
    );
    return doc !== null;
  }

  async find(filter: Filter, options: FindOptions): Promise<Listing[]> {
    return (await this.collection.find({ ...filter, ...notDeleted }, options)).map(toListing);
  }

  async count(filter: Filter): Promise<number> {
    return this.collection.count({ ...filter, ...notDeleted });
  }
}
