import { updateWithOutbox, withoutOutbox, type OutboxDoc, type OutboxEntry } from '@estate/bus';
import {
  DuplicateKeyError,
  updateVersioned,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
} from '@estate/store';
import { visibleItems, type MediaItem } from '../gallery.rules';

/**
 * One document per listing: what the media service knows of the listing (owner, whether it was
 * deleted) and all of its media, in display order. `version` is the
 * listing's media revision: every write bumps it (optimistic concurrency), and the events it
 * carries let consumers ignore older states.
 */
export interface Gallery {
  id: string;
  accountId: string;
  /** The listing's version in the event that told this service about it (first seen, or deleted). */
  listingVersion: number;
  listingDeleted?: true;
  items: MediaItem[];
  /** File tokens whose files are still to be deleted (written with the change that dropped them). */
  trash?: string[];
  version: number;
  createdAt: string;
  updatedAt: string;
}

export type GalleryDoc = Gallery & OutboxDoc;

/** The part of a gallery a change may set. */
export type GalleryChange = Partial<Pick<Gallery, 'items' | 'trash' | 'listingVersion' | 'listingDeleted'>>;

/** What a read-decide-write step decided: a change (with its event and what to answer), or nothing to do. */
export type Decision<R> =
  { change: GalleryChange; event?: (version: number) => OutboxEntry; result: (saved: Gallery) => R } | { done: R };

export const GALLERIES_COLLECTION = 'media_galleries';

/**
 * Compare-and-set attempts before a gallery change gives up (409): uploads racing for the last
 * free slots of one listing must all get their answer (201 or 409 `media_limit_reached`).
 */
export const GALLERY_CHANGE_ATTEMPTS = 60;

/** What the errors of a gallery compare-and-set call the thing that changed. */
export const GALLERY_WHAT = "listing's media";

/** Bookkeeping that is not part of what a client sees of an item. */
const UNVERSIONED = new Set(['version', 'updatedAt', 'since']);

function differs(a: MediaItem, b: MediaItem): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (UNVERSIONED.has(key)) continue;
    if ((a as unknown as Record<string, unknown>)[key] !== (b as unknown as Record<string, unknown>)[key]) return true;
  }
  return false;
}

/** Position of each shown item (its public `order`). */
function positions(items: readonly MediaItem[]): Map<string, number> {
  return new Map(visibleItems(items).map((i, index) => [i.id, index]));
}

/**
 * Each item a write changes (a field, or its position) gets its next version, once per write
 * however many rules touched it: the version is what ETag and If-Match speak about.
 */
function versioned(before: readonly MediaItem[], after: readonly MediaItem[], now: string): MediaItem[] {
  const previous = new Map(before.map((i) => [i.id, i]));
  const [was, is] = [positions(before), positions(after)];
  return after.map((item) => {
    const prev = previous.get(item.id);
    const changed = prev && (differs(prev, item) || was.get(item.id) !== is.get(item.id));
    return changed ? { ...item, version: prev.version + 1, updatedAt: now } : item;
  });
}

/** Optional fields are absent in storage, never null (the MongoDB driver would store `undefined` as null). */
function compact(item: MediaItem): MediaItem {
  return Object.fromEntries(
    Object.entries(item).filter(([, v]) => v !== undefined && v !== null),
  ) as unknown as MediaItem;
}

export class GalleryRepository {
  private constructor(readonly collection: DocumentCollection<GalleryDoc>) {}

  static async open(store: DocumentStore): Promise<GalleryRepository> {
    const col = await store.collection<GalleryDoc>(GALLERIES_COLLECTION, [
      { fields: { accountId: 1 } },
      { fields: { _outboxPending: 1 } },
    ]);
    return new GalleryRepository(col);
  }

  async get(listingId: string): Promise<Gallery | null> {
    const doc = await this.collection.findOne({ id: listingId });
    return doc ? (withoutOutbox(doc) as Gallery) : null;
  }

  /** Galleries matching `filter` (a sweep's candidates). */
  async find(filter: Filter, limit = 500): Promise<Gallery[]> {
    return (await this.collection.find(filter, { limit })).map((d) => withoutOutbox(d) as Gallery);
  }

  /** Inserts a new gallery; false when one exists already. */
  async insert(gallery: Gallery): Promise<boolean> {
    try {
      await this.collection.insertOne({ ...gallery, _outbox: [], _outboxPending: false });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /**
   * Writes `change` if the gallery is still at `current.version`, bumping the version, with the
   * event (built from the new version) in the same single-document write. Null when someone else
   * wrote first.
   */
  async save(
    current: Gallery,
    change: GalleryChange,
    now: string,
    event?: (version: number) => OutboxEntry,
  ): Promise<Gallery | null> {
    const version = current.version + 1;
    const $set: Record<string, unknown> = { version, updatedAt: now };
    const $unset: Record<string, true> = {};
    for (const [field, value] of Object.entries(change)) {
      if (field === 'items') $set.items = versioned(current.items, value as MediaItem[], now).map(compact);
      else if (field === 'trash' && Array.isArray(value) && value.length === 0) $unset.trash = true;
      else if (value === undefined) $unset[field] = true;
      else $set[field] = value;
    }
    const update = { $set, ...(Object.keys($unset).length > 0 ? { $unset } : {}) };
    const doc = await this.collection.updateOne(
      { id: current.id, version: current.version },
      event ? updateWithOutbox(update, event(version)) : update,
    );
    return doc ? (withoutOutbox(doc) as Gallery) : null;
  }

  /**
   * Read-decide-write until the write wins: `decide` sees the current gallery and returns the
   * change, or `done` for "nothing to write". Errors thrown by `decide` end the loop; a change
   * that keeps losing to other writers ends in 409 `conflict`.
   */
  async mutate<R>(listingId: string, decide: (gallery: Gallery | null) => Decision<R>, now: () => string): Promise<R> {
    // Wrapped, so a result that is itself null is not taken for a lost race.
    const outcome = await updateVersioned<Gallery | null, { value: R }>({
      what: GALLERY_WHAT,
      attempts: GALLERY_CHANGE_ATTEMPTS,
      read: () => this.get(listingId),
      versionOf: (gallery) => gallery?.version ?? 0,
      write: async (current) => {
        const decision = decide(current);
        if ('done' in decision) return { value: decision.done };
        if (!current) throw new Error('a gallery change needs an existing gallery');
        const saved = await this.save(current, decision.change, now(), decision.event);
        return saved ? { value: decision.result(saved) } : null;
      },
    });
    return outcome.value;
  }
}
