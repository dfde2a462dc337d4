import { idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { BULK_MAX_ITEMS, bulkAccepted, bulkListingsRequest, job } from '@estate/contracts/jobs';
import { allowRoles, callerOf, requestContext } from '@estate/platform/auth';
import { typed } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { BulkService } from '../bulk.service';
import { BULK_ROLES } from '../bulk.rules';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 422: problem };

export async function bulkRoutes(app: FastifyInstance, { bulk }: { bulk: BulkService }) {
  const r = typed(app);

  r.post(
    '/v1/listings/bulk',
    {
      preValidation: allowRoles(BULK_ROLES, 'submit bulk writes'),
      schema: {
        tags: ['listings'],
        operationId: 'bulkUpsertListings',
        summary: `Create or update 1 to ${BULK_MAX_ITEMS} listings as a tracked job`,
        description:
          'Answers 202 with the job id at once; the items are applied by a worker. Follow the job at `Location` ' +
          '(`GET /v1/jobs/:id`) or as server-sent events (`GET /v1/jobs/:id/events`). Items are validated one by one: ' +
          `a bad item is reported in the job's \`errors\` and the others are applied. More than ${BULK_MAX_ITEMS} items is 422 \`bulk_limit_exceeded\`.`,
        body: bulkListingsRequest,
        response: { 202: bulkAccepted, ...errors },
      },
    },
    async (request, reply) => {
      const accepted = await bulk.submit(requestContext(request), request.body);
      return reply.code(202).header('location', `/v1/jobs/${accepted.jobId}`).send(accepted);
    },
  );

  r.get(
    '/v1/jobs/:id',
    {
      schema: {
        tags: ['jobs'],
        operationId: 'getJob',
        summary: 'Get a job: state, progress, per-item results and errors',
        params: idParams,
        response: { 200: job, ...errors },
      },
    },
    async (request) => bulk.get(callerOf(request), request.params.id),
  );
}
