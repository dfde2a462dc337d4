import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { agent, agentCreate, agentListQuery, agentPage, agentPatch } from '@estate/contracts/leads';
import { allowRoles, callerOf } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { AgentsService } from '../agents.service';
import { TEAM_ADMINS } from '../lead-access.rules';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['agents'];

export async function agentRoutes(app: FastifyInstance, { agents }: { agents: AgentsService }) {
  const r = typed(app);

  r.post(
    '/v1/agents',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'manage agents'),
      schema: {
        tags,
        operationId: 'createAgent',
        summary: 'Add an agent',
        body: agentCreate,
        response: { 201: agent, ...errors },
      },
    },
    async (request, reply) => {
      const created = await agents.create(callerOf(request), request.body);
      setEtag(reply, created.version);
      return reply.code(201).header('location', `/v1/agents/${created.id}`).send(created);
    },
  );

  r.get(
    '/v1/agents',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'read agents'),
      schema: {
        tags,
        operationId: 'listAgents',
        summary: 'List agents',
        querystring: agentListQuery,
        response: { 200: agentPage, ...errors },
      },
    },
    async (request) => agents.list(callerOf(request), request.query),
  );

  r.get(
    '/v1/agents/:id',
    {
      schema: {
        tags,
        operationId: 'getAgent',
        summary: 'Get an agent',
        params: idParams,
        response: { 200: agent, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await agents.get(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/agents/:id',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'manage agents'),
      schema: {
        tags,
        operationId: 'updateAgent',
        summary: 'Update an agent (JSON merge patch; If-Match optional)',
        params: idParams,
        body: agentPatch,
        response: { 200: agent, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(reply, await agents.update(callerOf(request), request.params.id, request.body, ifMatchVersion(request))),
  );

  r.delete(
    '/v1/agents/:id',
    {
      schema: {
        tags,
        operationId: 'deleteAgent',
        summary: 'Delete an agent that holds no open lead',
        params: idParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) => agents.remove(callerOf(request), request.params.id, ifMatchVersion(request)),
  );
}
