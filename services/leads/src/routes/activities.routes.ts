import { idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { activity, activityCreate, activityPage, activityQuery } from '@estate/contracts/leads';
import { allowRoles, callerOf, requestContext } from '@estate/platform/auth';
import { typed } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { ActivitiesService } from '../activities.service';
import { ACTIVITY_WRITERS, LEAD_READERS } from '../lead-access.rules';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 413: problem, 422: problem };
const tags = ['activities'];

export async function activityRoutes(app: FastifyInstance, { activities }: { activities: ActivitiesService }) {
  const r = typed(app);

  r.get(
    '/v1/leads/:id/activities',
    {
      preValidation: allowRoles(LEAD_READERS, 'read lead activities'),
      schema: {
        tags,
        operationId: 'listLeadActivities',
        summary: "The lead's timeline, newest first",
        params: idParams,
        querystring: activityQuery,
        response: { 200: activityPage, ...errors },
      },
    },
    async (request) => activities.list(callerOf(request), request.params.id, request.query),
  );

  r.post(
    '/v1/leads/:id/activities',
    {
      preValidation: allowRoles(ACTIVITY_WRITERS, 'record lead activities'),
      schema: {
        tags,
        operationId: 'recordLeadActivity',
        summary: 'Record an activity (data at most 16 KB)',
        params: idParams,
        body: activityCreate,
        response: { 201: activity, ...errors },
      },
    },
    async (request, reply) => {
      const recorded = await activities.record(requestContext(request), request.params.id, request.body);
      return reply.code(201).send(recorded);
    },
  );
}
