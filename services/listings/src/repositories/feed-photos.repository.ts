import type { DocumentCollection, DocumentStore } from '@estate/store';

export const FEED_PHOTOS_COLLECTION = 'feed_photos';

/** One source photo as synced: its key at the source, our media, the content's hash and the source's timestamp. */
export interface SyncedPhoto {
  key: string;
  mediaId: string;
  sha256: string;
  modified?: string;
}

/** What a feed last synced of one listing's photos (keyed by the listing's id). */
export interface FeedPhotosDoc {
  id: string;
  accountId: string;
  feedId: string;
  listingKey: string;
  /** The source's PhotosChangeTimestamp when the photos were last synced in full. */
  photosChangedAt?: string;
  /** A download failed (or the sync was interrupted): the next run fetches this listing's media again. */
  pending: boolean;
  items: SyncedPhoto[];
}

export class FeedPhotosRepository {
  private constructor(readonly collection: DocumentCollection<FeedPhotosDoc>) {}

  static async open(store: DocumentStore): Promise<FeedPhotosRepository> {
    return new FeedPhotosRepository(
      await store.collection<FeedPhotosDoc>(FEED_PHOTOS_COLLECTION, [{ fields: { feedId: 1, pending: 1 } }]),
    );
  }

  get(id: string): Promise<FeedPhotosDoc | null> {
    return this.collection.findOne({ id });
  }

  async save(doc: FeedPhotosDoc): Promise<void> {
    const { id, ...rest } = doc;
    const saved = await this.collection.updateOne({ id }, { $set: rest });
    if (!saved) await this.collection.insertOne(doc);
  }

  /** Listings of the feed whose photos are to be fetched again. */
  pending(feedId: string, limit: number): Promise<FeedPhotosDoc[]> {
    return this.collection.find({ feedId, pending: true }, { sort: { id: 1 }, limit });
  }
}
