import { problem } from '@estate/contracts/errors';
import { eventFeedPage, eventFeedQuery } from '@estate/contracts/webhooks';
import { allowRoles, callerOf } from '@estate/platform/auth';
import { typed } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { FeedService } from '../feed.service';

const errors = { 400: problem, 401: problem, 403: problem, 422: problem };

export async function eventRoutes(app: FastifyInstance, { feed }: { feed: FeedService }) {
  typed(app).get(
    '/v1/events',
    {
      preValidation: allowRoles(['admin', 'integration'], 'read the change feed'),
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        summary: "The account's change feed, oldest first, deletions included, kept 30 days",
        description:
          'Poll with the `nextCursor` of the previous page (never null); an empty page means up to date. Admin and integration keys; ' +
          'an integration key reads no lead pipeline: its feed carries listing, media and job events, and naming a `lead.*` or `activity.created` type is 403.',
        querystring: eventFeedQuery,
        response: { 200: eventFeedPage, ...errors },
      },
    },
    async (request) => feed.read(callerOf(request), request.query),
  );
}
