import { problem } from '@estate/contracts/errors';
import { scoringConfig, scoringConfigInput } from '@estate/contracts/leads';
import { allowRoles, callerOf } from '@estate/platform/auth';
import { ifMatchVersion, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { ScoringService } from '../scoring.service';
import { TEAM_ADMINS } from '../lead-access.rules';

const errors = { 400: problem, 401: problem, 403: problem, 409: problem, 412: problem, 422: problem };
const tags = ['scoring'];

export async function scoringRoutes(app: FastifyInstance, { scoring }: { scoring: ScoringService }) {
  const r = typed(app);

  r.get(
    '/v1/scoring/config',
    {
      schema: {
        tags,
        operationId: 'getScoringConfig',
        summary: 'The scoring configuration (the documented defaults until changed)',
        response: { 200: scoringConfig, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await scoring.get(callerOf(request))),
  );

  r.put(
    '/v1/scoring/config',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'change the scoring configuration'),
      schema: {
        tags,
        operationId: 'replaceScoringConfig',
        summary: 'Replace the scoring configuration; existing leads are rescored in the background',
        body: scoringConfigInput,
        response: { 200: scoringConfig, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(reply, await scoring.put(callerOf(request), request.body, ifMatchVersion(request))),
  );
}
