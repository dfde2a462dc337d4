import type { EventFeedPage, EventFeedQuery } from '@estate/contracts/webhooks';
import { assertRole, type Identity } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { decodeCursor, encodeCursor } from '@estate/platform/pagination';
import { feedTypesFor } from './event.rules';
import { positionAt, type FeedRepository } from './repositories/feed.repository';

/** How long the feed keeps events. */
export const FEED_RETENTION_MS = 30 * 24 * 3600 * 1000;

const feedCursor = (pos: string, accountId: string): string => encodeCursor({ v: pos, id: 'feed' }, accountId);

function positionOf(cursor: string | undefined, accountId: string): string {
  const state = decodeCursor(cursor, accountId);
  if (!state) return '';
  if (state.id !== 'feed' || typeof state.v !== 'string' || !/^[0-9a-f.]{0,40}$/.test(state.v))
    throw new AppError('invalid_cursor', 'The cursor is not one this feed issued; start again without it');
  return state.v;
}

/**
 * The account's change feed, oldest first. An event becomes visible `settleMs` after it was
 * recorded: replicas record concurrently, and by then every event positioned before it has been
 * written, so a reader never steps past one that is still on its way.
 */
export class FeedService {
  constructor(private readonly deps: { feed: FeedRepository; clock: () => Date; settleMs: number }) {}

  async read(who: Identity, query: EventFeedQuery): Promise<EventFeedPage> {
    assertRole(who, ['admin', 'integration'], 'read the change feed');
    const readable = feedTypesFor(who.role, query.types);
    if ('refused' in readable)
      throw new AppError(
        'forbidden',
        `A key with role ${who.role} reads no lead pipeline; leave out ${readable.refused.join(', ')}`,
      );
    // An empty `after` is a poller's first call (`after=$cursor` with nothing stored yet): from the start.
    const after = positionOf(query.after || undefined, who.accountId);
    const settledBefore = positionAt(this.deps.clock().getTime() - this.deps.settleMs);
    const docs = await this.deps.feed.read(who.accountId, after, {
      types: readable.types === 'all' ? undefined : [...readable.types],
      limit: query.limit,
      settledBefore,
    });
    const last = docs.length > 0 ? docs[docs.length - 1].pos : after;
    return {
      items: docs.map(({ id, type, createdAt, accountId, data }) => ({ id, type, createdAt, accountId, data })),
      nextCursor: feedCursor(last, who.accountId),
    };
  }
}
