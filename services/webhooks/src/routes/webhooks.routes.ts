import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import {
  delivery,
  deliveryListQuery,
  deliveryPage,
  deliveryParams,
  webhook,
  webhookCreate,
  webhookListQuery,
  webhookPage,
  webhookPatch,
  webhookWithSecret,
} from '@estate/contracts/webhooks';
import { allowRoles, callerOf } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { DeliveriesService } from '../deliveries.service';
import type { EndpointsService } from '../endpoints.service';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['webhooks'];

export async function webhookRoutes(
  app: FastifyInstance,
  { endpoints, deliveries }: { endpoints: EndpointsService; deliveries: DeliveriesService },
) {
  const r = typed(app);

  r.post(
    '/v1/webhooks',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Register a webhook endpoint (its signing secret is shown only in this answer)',
        body: webhookCreate,
        response: { 201: webhookWithSecret, ...errors },
      },
    },
    async (request, reply) => {
      const created = await endpoints.create(callerOf(request), request.body);
      setEtag(reply, created.version);
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .header('location', `/v1/webhooks/${created.id}`)
        .send(created);
    },
  );

  r.get(
    '/v1/webhooks',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints',
        querystring: webhookListQuery,
        response: { 200: webhookPage, ...errors },
      },
    },
    async (request) => endpoints.list(callerOf(request), request.query),
  );

  r.get(
    '/v1/webhooks/:id',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint',
        params: idParams,
        response: { 200: webhook, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await endpoints.get(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/webhooks/:id',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary:
          'Change a webhook endpoint (JSON merge patch; If-Match optional); enabling it clears its failure record',
        params: idParams,
        body: webhookPatch,
        response: { 200: webhook, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(
        reply,
        await endpoints.update(callerOf(request), request.params.id, request.body, ifMatchVersion(request)),
      ),
  );

  r.delete(
    '/v1/webhooks/:id',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Remove a webhook endpoint and its queued deliveries',
        params: idParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) => endpoints.remove(callerOf(request), request.params.id, ifMatchVersion(request)),
  );

  r.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret (the new one signs every later attempt; shown only in this answer)',
        params: idParams,
        response: { 200: webhookWithSecret, ...errors },
      },
    },
    async (request, reply) => {
      const rotated = await endpoints.rotateSecret(callerOf(request), request.params.id);
      setEtag(reply, rotated.version);
      return reply.header('cache-control', 'no-store').send(rotated);
    },
  );

  r.post(
    '/v1/webhooks/:id/test',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'testWebhook',
        summary: 'Send a `webhook.test` event to this endpoint',
        params: idParams,
        response: { 202: delivery, ...errors },
      },
    },
    async (request, reply) => reply.code(202).send(await deliveries.test(callerOf(request), request.params.id)),
  );

  r.get(
    '/v1/webhooks/:id/deliveries',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: "An endpoint's deliveries, newest first",
        params: idParams,
        querystring: deliveryListQuery,
        response: { 200: deliveryPage, ...errors },
      },
    },
    async (request) => deliveries.list(callerOf(request), request.params.id, request.query),
  );

  r.post(
    '/v1/webhooks/:id/deliveries/:deliveryId/retry',
    {
      preValidation: allowRoles(['admin'], 'manage webhooks'),
      schema: {
        tags,
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again now',
        params: deliveryParams,
        response: { 202: delivery, ...errors },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await deliveries.retry(callerOf(request), request.params.id, request.params.deliveryId)),
  );
}
