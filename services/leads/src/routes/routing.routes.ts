import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import {
  routingDecision,
  routingPreviewBody,
  routingRule,
  routingRuleCreate,
  routingRuleListQuery,
  routingRulePage,
  routingRulePatch,
  routingSettings,
  routingSettingsPut,
} from '@estate/contracts/leads';
import { allowRoles, callerOf } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { RoutingRulesService } from '../routing-rules.service';
import type { RoutingService } from '../routing.service';
import { TEAM_ADMINS } from '../lead-access.rules';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['routing'];

export async function routingRoutes(
  app: FastifyInstance,
  { routing, rules }: { routing: RoutingService; rules: RoutingRulesService },
) {
  const r = typed(app);

  r.post(
    '/v1/routing/rules',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'manage routing rules'),
      schema: {
        tags,
        operationId: 'createRoutingRule',
        summary: 'Add a routing rule',
        body: routingRuleCreate,
        response: { 201: routingRule, ...errors },
      },
    },
    async (request, reply) => {
      const created = await rules.createRule(callerOf(request), request.body);
      setEtag(reply, created.version);
      return reply.code(201).header('location', `/v1/routing/rules/${created.id}`).send(created);
    },
  );

  r.get(
    '/v1/routing/rules',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'read routing rules'),
      schema: {
        tags,
        operationId: 'listRoutingRules',
        summary: 'List routing rules in the order routing tries them',
        querystring: routingRuleListQuery,
        response: { 200: routingRulePage, ...errors },
      },
    },
    async (request) => rules.listRules(callerOf(request), request.query),
  );

  r.get(
    '/v1/routing/rules/:id',
    {
      schema: {
        tags,
        operationId: 'getRoutingRule',
        summary: 'Get a routing rule',
        params: idParams,
        response: { 200: routingRule, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await rules.getRule(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/routing/rules/:id',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'manage routing rules'),
      schema: {
        tags,
        operationId: 'updateRoutingRule',
        summary: 'Update a routing rule (JSON merge patch; If-Match optional)',
        params: idParams,
        body: routingRulePatch,
        response: { 200: routingRule, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(
        reply,
        await rules.updateRule(callerOf(request), request.params.id, request.body, ifMatchVersion(request)),
      ),
  );

  r.delete(
    '/v1/routing/rules/:id',
    {
      schema: {
        tags,
        operationId: 'deleteRoutingRule',
        summary: 'Delete a routing rule',
        params: idParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) => rules.deleteRule(callerOf(request), request.params.id, ifMatchVersion(request)),
  );

  r.get(
    '/v1/routing/settings',
    {
      schema: {
        tags,
        operationId: 'getRoutingSettings',
        summary: 'The team default: who gets a lead no rule takes',
        response: { 200: routingSettings, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await rules.getSettings(callerOf(request))),
  );

  r.put(
    '/v1/routing/settings',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'change routing settings'),
      schema: {
        tags,
        operationId: 'replaceRoutingSettings',
        summary: 'Replace the team default (If-Match optional)',
        body: routingSettingsPut,
        response: { 200: routingSettings, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(reply, await rules.putSettings(callerOf(request), request.body, ifMatchVersion(request))),
  );

  r.post(
    '/v1/routing/preview',
    {
      preValidation: allowRoles(TEAM_ADMINS, 'preview routing'),
      schema: {
        tags,
        operationId: 'previewRouting',
        summary: 'Who would get this lead (a lead body, or { leadId }); assigns nobody',
        body: routingPreviewBody,
        response: { 200: routingDecision, ...errors },
      },
    },
    async (request) => routing.preview(callerOf(request), request.body),
  );
}
