import type { EventFeedPage, EventFeedQuery } from '@estate/contracts/webhooks';
import { assertRole, type Identity } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import type { FeedRepository } from './repositories/feed.repository';

/** How long the feed keeps events. */
export const FEED_RETENTION_MS = 30 * 24 * 3600 * 1000;

const feedCursor = (seq: number): string => encodeCursor({ v: seq, id: 'feed' });

function seqOf(cursor: string | undefined): number {
  const state = decodeCursor(cursor);
  if (!state) return 0;
  if (state.id !== 'feed' || typeof state.v !== 'number' || !Number.isInteger(state.v) || state.v < 0)
    throw new AppError('invalid_cursor', 'The cursor is not one this feed issued; start again without it');
  return state.v;
}

/**
 * The account's change feed, oldest first. An event becomes visible once every event numbered
 * before it has had time to be written (`settleMs`): replicas take numbers and write concurrently,
 * and a reader must never step past a number that is still being written.
 */
export class FeedService {
  constructor(private readonly deps: { feed: FeedRepository; clock: () => Date; settleMs: number }) {}

  async read(who: Identity, query: EventFeedQuery): Promise<EventFeedPage> {
    assertRole(who, ['admin', 'integration'], 'read the change feed');
    const after = seqOf(query.after);
    const settledBefore = new Date(this.deps.clock().getTime() - this.deps.settleMs).toISOString();
    const docs = await this.deps.feed.read(who.accountId, after, {
      types: query.types,
      limit: query.limit,
      settledBefore,
    });
    const last = docs.length > 0 ? docs[docs.length - 1].seq : after;
    return {
      items: docs.map(({ id, type, createdAt, accountId, data }) => ({ id, type, createdAt, accountId, data })),
      nextCursor: feedCursor(last),
    };
  }
}
