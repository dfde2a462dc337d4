import { idParams } from '@estate/contracts';
import {
  accountCreate,
  accountCreated,
  apiKeyCreate,
  apiKeyList,
  apiKeyListQuery,
  apiKeyWithSecret,
} from '@estate/contracts/accounts';
import { problem } from '@estate/contracts/errors';
import { allowRoles, assertRole, callerOf } from '@estate/platform/auth';
import { typed } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AccessService } from '../access.service';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 422: problem };

export async function accessRoutes(app: FastifyInstance, { access }: { access: AccessService }) {
  const r = typed(app);

  r.post(
    '/v1/api-keys',
    {
      preValidation: allowRoles(['admin'], 'manage API keys'),
      schema: {
        tags: ['access'],
        operationId: 'createApiKey',
        summary: 'Create an API key (the secret is shown only in this answer)',
        body: apiKeyCreate,
        response: { 201: apiKeyWithSecret, ...errors },
      },
    },
    async (request, reply) => {
      const who = callerOf(request);
      assertRole(who, ['admin'], 'manage API keys');
      const created = await access.createKey(who, request.body, request.id);
      return reply.code(201).header('cache-control', 'no-store').send(created);
    },
  );

  r.get(
    '/v1/api-keys',
    {
      preValidation: allowRoles(['admin'], 'manage API keys'),
      schema: {
        tags: ['access'],
        operationId: 'listApiKeys',
        summary: "List the account's live API keys (without secrets), oldest first",
        querystring: apiKeyListQuery,
        response: { 200: apiKeyList, ...errors },
      },
    },
    async (request) => {
      const who = callerOf(request);
      assertRole(who, ['admin'], 'manage API keys');
      return access.pageKeys(who.accountId, request.query);
    },
  );

  r.delete(
    '/v1/api-keys/:id',
    {
      schema: {
        tags: ['access'],
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key, effective at once',
        params: idParams,
        // 409 `last_admin_key`: the account's only live admin key stays.
        response: { 200: z.object({ id: z.string(), revoked: z.literal(true) }), ...errors, 409: problem },
      },
    },
    async (request) => {
      const who = callerOf(request);
      assertRole(who, ['admin'], 'manage API keys');
      await access.revokeKey(who.accountId, request.params.id);
      return { id: request.params.id, revoked: true as const };
    },
  );

  r.post(
    '/v1/accounts',
    {
      preValidation: allowRoles(['platform'], 'create accounts'),
      schema: {
        tags: ['access'],
        operationId: 'createAccount',
        summary: 'Create an account with its first admin key (platform key only)',
        body: accountCreate,
        response: { 201: accountCreated, ...errors },
      },
    },
    async (request, reply) => {
      assertRole(callerOf(request), ['platform'], 'create accounts');
      const created = await access.createAccount(request.body.name);
      return reply.code(201).header('cache-control', 'no-store').send(created);
    },
  );
}
