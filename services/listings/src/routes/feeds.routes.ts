import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { feed, feedCreate, feedListQuery, feedPage, feedPatch, feedRunQuery } from '@estate/contracts/feeds';
import { job } from '@estate/contracts/jobs';
import { page } from '@estate/contracts';
import { allowRoles, callerOf, requestContext } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { FeedsService } from '../feeds.service';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['feeds'];
const jobPage = page(job).meta({ id: 'JobPage' });

export async function feedRoutes(app: FastifyInstance, { feeds }: { feeds: FeedsService }) {
  const r = typed(app);
  const adminOnly = allowRoles(['admin'], 'manage feeds');

  r.post(
    '/v1/feeds',
    {
      preValidation: adminOnly,
      schema: {
        tags,
        operationId: 'createFeed',
        summary: 'Connect a RESO Web API feed (its credentials are stored encrypted and never returned)',
        body: feedCreate,
        response: { 201: feed, ...errors },
      },
    },
    async (request, reply) => {
      const created = await feeds.create(callerOf(request), request.body);
      setEtag(reply, created.version);
      return reply.code(201).header('location', `/v1/feeds/${created.id}`).send(created);
    },
  );

  r.get(
    '/v1/feeds',
    {
      preValidation: adminOnly,
      schema: {
        tags,
        operationId: 'listFeeds',
        summary: 'List feeds',
        querystring: feedListQuery,
        response: { 200: feedPage, ...errors },
      },
    },
    async (request) => feeds.list(callerOf(request), request.query),
  );

  r.get(
    '/v1/feeds/:id',
    {
      preValidation: adminOnly,
      schema: {
        tags,
        operationId: 'getFeed',
        summary: 'Get a feed',
        params: idParams,
        response: { 200: feed, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await feeds.get(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/feeds/:id',
    {
      preValidation: adminOnly,
      schema: {
        tags,
        operationId: 'updateFeed',
        summary: 'Change a feed (JSON merge patch; If-Match optional)',
        description: 'A new `serviceRoot` or `filter` starts the next run from the beginning of the feed.',
        params: idParams,
        body: feedPatch,
        response: { 200: feed, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(reply, await feeds.update(callerOf(request), request.params.id, request.body, ifMatchVersion(request))),
  );

  r.delete(
    '/v1/feeds/:id',
    {
      preValidation: adminOnly,
      schema: {
        tags,
        operationId: 'deleteFeed',
        summary: 'Delete a feed (its listings stay)',
        params: idParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) => feeds.remove(callerOf(request), request.params.id, ifMatchVersion(request)),
  );

  r.post(
    '/v1/feeds/:id/runs',
    {
      preValidation: allowRoles(['admin'], 'run feeds'),
      schema: {
        tags,
        operationId: 'runFeed',
        summary: 'Run a feed now, as a tracked `feed_sync` job',
        description:
          "Answers 202 with the job; follow it at `Location` (`GET /v1/jobs/:id`, or its events). The job's `ledger` is the " +
          'sync ledger. `?dryRun=true` fetches and reports what would change (`ledger.preview`) and writes nothing. ' +
          '`?reconcile=true` ends the run with a complete key pull: listings the feed no longer has are hidden ' +
          '(`sourceMissing`), and deleted once missing for `removals.quarantineRuns` key pulls, unless more than ' +
          '`removals.maxRemovedPercent` of the feed would go (then none does). One run ' +
          'of a feed at a time: 409 `feed_run_in_progress` while one is.',
        params: idParams,
        querystring: feedRunQuery,
        response: { 202: job, ...errors },
      },
    },
    async (request, reply) => {
      const run = await feeds.startRun(requestContext(request), request.params.id, request.query);
      return reply.code(202).header('location', `/v1/jobs/${run.id}`).send(run);
    },
  );

  r.get(
    '/v1/feeds/:id/runs',
    {
      preValidation: allowRoles(['admin'], 'run feeds'),
      schema: {
        tags,
        operationId: 'listFeedRuns',
        summary: "A feed's runs, newest first",
        params: idParams,
        querystring: feedListQuery,
        response: { 200: jobPage, ...errors },
      },
    },
    async (request) => feeds.runs(callerOf(request), request.params.id, request.query),
  );
}
