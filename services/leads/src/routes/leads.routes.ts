import { idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { lead, leadCapture, leadCaptureAnswer, leadPage, leadPatch, leadSearchQuery } from '@estate/contracts/leads';
import { callerOf, requestContext } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { LeadsService } from '../leads.service';
import type { RoutingService } from '../routing.service';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['leads'];

export async function leadRoutes(
  app: FastifyInstance,
  { leads, routing }: { leads: LeadsService; routing: RoutingService },
) {
  const r = typed(app);

  r.post(
    '/v1/leads',
    {
      schema: {
        tags,
        summary: 'Capture a lead (the same person, by email or phone, is never duplicated: 200 with duplicate true)',
        body: leadCapture,
        response: { 200: leadCaptureAnswer, 201: leadCaptureAnswer, ...errors },
      },
    },
    async (request, reply) => {
      const ctx = requestContext(request);
      const { lead: captured, duplicate } = await leads.capture(ctx, request.body);
      reply.code(duplicate ? 200 : 201).header('location', `/v1/leads/${captured.id}`);
      // An integration key (a website form, a portal feed) learns that the lead is in, never what it holds.
      if (ctx.who.role === 'integration') return reply.send({ id: captured.id, duplicate });
      setEtag(reply, captured.version);
      return reply.send(captured);
    },
  );

  r.get(
    '/v1/leads',
    {
      schema: {
        tags,
        summary: 'Search the pipeline',
        querystring: leadSearchQuery,
        response: { 200: leadPage, ...errors },
      },
    },
    async (request) => leads.search(callerOf(request), request.query),
  );

  r.get(
    '/v1/leads/:id',
    {
      schema: {
        tags,
        summary: 'Get a lead with its latest activities and listing interests',
        params: idParams,
        response: { 200: lead, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await leads.get(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/leads/:id',
    {
      schema: {
        tags,
        summary:
          'Update a lead: status along the pipeline, contact fields, tags, agentId (admins), score (null hands it back to the engine)',
        params: idParams,
        body: leadPatch,
        response: { 200: lead, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(
        reply,
        await leads.update(requestContext(request), request.params.id, request.body, ifMatchVersion(request)),
      ),
  );

  r.post(
    '/v1/leads/:id/route',
    {
      schema: {
        tags: ['routing'],
        summary: "Route a lead to an agent by the team's rules (409 no_agent_available when nobody can take it)",
        params: idParams,
        response: { 200: lead, ...errors },
      },
    },
    async (request, reply) => {
      const routed = await routing.route(requestContext(request), request.params.id);
      const view = await leads.view(routed);
      setEtag(reply, view.version);
      return view;
    },
  );
}
