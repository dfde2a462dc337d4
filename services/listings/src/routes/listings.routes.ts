import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import { listing, listingCreate, listingPage, listingPatch, listingSearchQuery } from '@estate/contracts/listings';
import { allowRoles, callerOf, requestContext } from '@estate/platform/auth';
import { ifMatchVersion, setEtag, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import type { ListingsService } from '../listings.service';
import type { SearchService } from '../search.service';
import { LISTING_READERS, LISTING_WRITERS } from '../listing.rules';

const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 412: problem, 422: problem };
const tags = ['listings'];

export async function listingRoutes(
  app: FastifyInstance,
  { listings, search }: { listings: ListingsService; search: SearchService },
) {
  const r = typed(app);

  r.post(
    '/v1/listings',
    {
      preValidation: allowRoles(LISTING_WRITERS, 'create listings'),
      schema: {
        tags,
        operationId: 'createListing',
        summary: 'Create a listing',
        body: listingCreate,
        response: { 201: listing, ...errors },
      },
    },
    async (request, reply) => {
      const created = await listings.create(requestContext(request), request.body);
      setEtag(reply, created.version);
      return reply.code(201).header('location', `/v1/listings/${created.id}`).send(created);
    },
  );

  r.get(
    '/v1/listings',
    {
      preValidation: allowRoles(LISTING_READERS, 'read listings'),
      schema: {
        tags,
        operationId: 'searchListings',
        summary: 'Search listings: filters, geo, full text, facets (served by the search index)',
        querystring: listingSearchQuery,
        response: { 200: listingPage, ...errors },
      },
    },
    async (request, reply) => {
      const { page, indexMs, callMs } = await search.search(callerOf(request), request.query);
      // The index's own time and the whole call to it, so that what our layers add can be told apart (browsers' dev
      // tools show them).
      reply.header('server-timing', `index;dur=${indexMs.toFixed(1)}, index-call;dur=${callMs.toFixed(1)}`);
      return page;
    },
  );

  r.get(
    '/v1/listings/:id',
    {
      schema: {
        tags,
        operationId: 'getListing',
        summary: 'Get a listing',
        params: idParams,
        response: { 200: listing, ...errors },
      },
    },
    async (request, reply) => withEtag(reply, await listings.get(callerOf(request), request.params.id)),
  );

  r.patch(
    '/v1/listings/:id',
    {
      preValidation: allowRoles(LISTING_WRITERS, 'change listings'),
      schema: {
        tags,
        operationId: 'updateListing',
        summary: 'Update a listing (JSON merge patch; If-Match optional)',
        params: idParams,
        body: listingPatch,
        response: { 200: listing, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(
        reply,
        await listings.update(requestContext(request), request.params.id, request.body, ifMatchVersion(request)),
      ),
  );

  r.delete(
    '/v1/listings/:id',
    {
      schema: {
        tags,
        operationId: 'deleteListing',
        summary: 'Delete a listing and its media',
        params: idParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) => listings.remove(requestContext(request), request.params.id, ifMatchVersion(request)),
  );
}
