import type { LeadListingSummary } from '@estate/contracts/leads';
import { DuplicateKeyError, type DocumentCollection, type DocumentStore, type Update, storable } from '@estate/store';

type Photo = LeadListingSummary['primaryPhoto'];

/**
 * What the leads service knows of a listing, from listing events (`listingVersion`) and media
 * events (`mediaVersion`, the listing's media revision). Each source is applied only when newer
 * than what is stored, so redelivered or late events change nothing. A deleted listing stays as a
 * tombstone so that a late `updated` cannot bring it back.
 */
interface SummaryDoc {
  id: string;
  accountId: string;
  listingVersion?: number;
  summary?: Omit<LeadListingSummary, 'primaryPhoto'> & { primaryPhoto?: NonNullable<Photo> };
  deleted?: boolean;
  mediaVersion?: number;
  mediaPhoto?: NonNullable<Photo>;
}

export const LISTING_SUMMARIES_COLLECTION = 'listing_summaries';

/** Listings one request has read already: every id asked about, and the summaries of those that exist. */
export interface KnownListings {
  ids: ReadonlySet<string>;
  summaries: ReadonlyMap<string, LeadListingSummary>;
}

/** A stored summary as callers see it (its photo from the media events once one came), or none. */
function resolved(doc: SummaryDoc): LeadListingSummary | undefined {
  if (doc.deleted || !doc.summary) return undefined;
  const photo = doc.mediaVersion !== undefined ? doc.mediaPhoto : doc.summary.primaryPhoto;
  return { ...doc.summary, address: { ...doc.summary.address }, primaryPhoto: photo ?? null };
}

export class ListingSummaryRepository {
  private constructor(private readonly collection: DocumentCollection<SummaryDoc>) {}

  static async open(store: DocumentStore): Promise<ListingSummaryRepository> {
    return new ListingSummaryRepository(
      await store.collection<SummaryDoc>(LISTING_SUMMARIES_COLLECTION, [{ fields: { accountId: 1 } }]),
    );
  }

  /** A listing created or updated (`summary`), or deleted (null), at `version`; true when it changed what is stored. */
  async applyListing(
    accountId: string,
    listingId: string,
    version: number,
    summary: LeadListingSummary | null,
  ): Promise<boolean> {
    const fields = summary ? { summary: storable(summary) as SummaryDoc['summary'] } : { deleted: true };
    const update: Update = summary
      ? { $set: { listingVersion: version, ...fields }, $unset: { deleted: true } }
      : { $set: { listingVersion: version, ...fields }, $unset: { summary: true } };
    return this.applyNewer(
      accountId,
      listingId,
      'listingVersion',
      version,
      { listingVersion: version, ...fields },
      update,
    );
  }

  /** The listing's primary photo after a media change at media revision `version`. */
  async applyMedia(accountId: string, listingId: string, version: number, photo: Photo): Promise<boolean> {
    const update: Update = photo
      ? { $set: { mediaVersion: version, mediaPhoto: photo } }
      : { $set: { mediaVersion: version }, $unset: { mediaPhoto: true } };
    return this.applyNewer(
      accountId,
      listingId,
      'mediaVersion',
      version,
      storable({ mediaVersion: version, mediaPhoto: photo ?? undefined }),
      update,
    );
  }

  /**
   * Summaries of the listings known and not deleted, by id. Ids in `known` are answered from it without a read (what
   * the request read a moment ago, see `lookup`).
   */
  async resolve(
    accountId: string,
    listingIds: readonly string[],
    known?: KnownListings,
  ): Promise<Map<string, LeadListingSummary>> {
    const out = new Map<string, LeadListingSummary>();
    const ids = [...new Set(listingIds)];
    const rest = known ? ids.filter((id) => !known.ids.has(id)) : ids;
    if (known)
      for (const id of ids) {
        const summary = known.summaries.get(id);
        if (summary) out.set(id, summary);
      }
    if (rest.length === 0) return out;
    const docs = await this.collection.find({ accountId, id: { $in: rest } }, {});
    for (const doc of docs) {
      const summary = resolved(doc);
      if (summary) out.set(doc.id, summary);
    }
    return out;
  }

  /**
   * One read of these listings: the account's summaries (as `resolve` answers them), and the ids no listing event
   * has reached yet (of any account: neither a summary nor deleted).
   */
  async lookup(accountId: string, listingIds: readonly string[]): Promise<{ known: KnownListings; unheard: string[] }> {
    const ids = [...new Set(listingIds)];
    const summaries = new Map<string, LeadListingSummary>();
    if (ids.length === 0) return { known: { ids: new Set(), summaries }, unheard: [] };
    const docs = await this.collection.find({ id: { $in: ids } }, {});
    const heard = new Set(docs.filter((d) => d.deleted || d.summary).map((d) => d.id));
    for (const doc of docs) {
      const summary = doc.accountId === accountId ? resolved(doc) : undefined;
      if (summary) summaries.set(doc.id, summary);
    }
    return { known: { ids: new Set(ids), summaries }, unheard: ids.filter((id) => !heard.has(id)) };
  }

  private async applyNewer(
    accountId: string,
    id: string,
    field: 'listingVersion' | 'mediaVersion',
    version: number,
    created: Partial<SummaryDoc>,
    update: Update,
  ): Promise<boolean> {
    try {
      await this.collection.insertOne({ id, accountId, ...created });
      return true;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const applied = await this.collection.updateOne(
      { id, accountId, $or: [{ [field]: { $lt: version } }, { [field]: { $exists: false } }] },
      update,
    );
    return applied !== null;
  }
}
