import multipart from '@fastify/multipart';
import { deleted, idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import {
  MAX_CAPTION_LENGTH,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_LISTING,
  media,
  mediaCaption,
  mediaItems,
  mediaListQuery,
  mediaOrder,
  mediaPage,
  mediaParams,
  mediaPatch,
  virtualTourCreate,
} from '@estate/contracts/media';
import { allowRoles, callerOf, requestContext, signedBodyComplete } from '@estate/platform/auth';
import { AppError, validationError } from '@estate/platform/errors';
import { ifMatchVersion, typed, withEtag } from '@estate/platform/http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GalleryService } from '../gallery.service';
import { CUT_SHORT, type UploadService, type UploadSession } from '../upload.service';
import { READERS, WRITERS } from '../gallery.service';

const errors = {
  400: problem,
  401: problem,
  403: problem,
  404: problem,
  409: problem,
  412: problem,
  413: problem,
  415: problem,
  422: problem,
};
const tags = ['media'];

const UPLOAD_DESCRIPTION = [
  'Either `multipart/form-data` with one or more parts named `file` (JPEG or PNG, judged from the bytes; at most',
  `${MAX_IMAGE_BYTES / 1024 / 1024} MB each), each optionally followed by a text part named \`caption\`;`,
  'or JSON `{ "type": "virtual_tour", "url": "https://…", "caption": "…" }`.',
  `A listing holds at most ${MAX_IMAGES_PER_LISTING} images (409 \`media_limit_reached\`). Images answer with status`,
  '`processing` until their renditions exist. A refused file (413, 415, 422 `image_corrupt` / `image_too_large`)',
  'refuses the whole request: nothing of it is stored.',
].join(' ');

/**
 * What the multipart parser fails with is the body's fault (cut short, malformed): 400, not 500. The
 * plugin's own refusals (limits) keep their status.
 */
function malformedBody(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && status < 500) return err;
  return new AppError('malformed_request', CUT_SHORT);
}

/** The parts of a multipart upload, in order, with the parser's failures turned into the client error they are. */
async function* partsOf(request: FastifyRequest) {
  const parts = request.parts()[Symbol.asyncIterator]();
  for (;;) {
    let next;
    try {
      next = await parts.next();
    } catch (err) {
      throw malformedBody(err);
    }
    if (next.done) return;
    yield next.value;
  }
}

/** Reads the parts of a multipart upload into the session, in order. */
async function readParts(request: FastifyRequest, session: UploadSession): Promise<void> {
  for await (const part of partsOf(request)) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw new AppError(
          'validation_failed',
          `Unknown file part \`${part.fieldname}\`: images go in parts named \`file\``,
          { errors: [{ path: part.fieldname, message: 'is not a known field' }] },
        );
      }
      await session.addFile(part.file);
      continue;
    }
    if (part.fieldname !== 'caption') {
      throw new AppError('validation_failed', `Unknown form field \`${part.fieldname}\``, {
        errors: [{ path: part.fieldname, message: 'is not a known field' }],
      });
    }
    if (part.valueTruncated) {
      throw new AppError('validation_failed', 'The caption is too long', {
        errors: [{ path: 'caption', message: `must be at most ${MAX_CAPTION_LENGTH} characters` }],
      });
    }
    const caption = mediaCaption.safeParse(String(part.value));
    if (!caption.success) throw validationError(caption.error, ['caption'], 'The caption is not valid');
    session.setCaption(caption.data);
  }
}

export async function mediaRoutes(
  app: FastifyInstance,
  { gallery, uploads }: { gallery: GalleryService; uploads: UploadService },
) {
  await app.register(multipart, {
    // One more file than a listing may hold, so the 51st image meets the limit rule (409), not the parser.
    limits: {
      fileSize: MAX_IMAGE_BYTES,
      files: MAX_IMAGES_PER_LISTING + 1,
      fields: MAX_IMAGES_PER_LISTING + 1,
      parts: 2 * MAX_IMAGES_PER_LISTING + 2,
      fieldSize: 8 * 1024,
      headerPairs: 100,
    },
    throwFileSizeLimit: true,
  });
  const r = typed(app);

  r.post(
    '/v1/listings/:id/media',
    {
      preValidation: allowRoles(WRITERS, 'add media'),
      schema: {
        tags,
        operationId: 'addListingMedia',
        summary: 'Upload photos (multipart) or add a virtual tour (JSON)',
        description: UPLOAD_DESCRIPTION,
        params: idParams,
        // Null for multipart bodies, which the route reads as a stream.
        body: virtualTourCreate.nullish(),
        'x-multipart': {
          type: 'object',
          properties: {
            file: {
              type: 'array',
              minItems: 1,
              items: { type: 'string', format: 'binary', contentMediaType: 'image/jpeg' },
              description: `One or more JPEG or PNG images, at most ${MAX_IMAGE_BYTES / 1024 / 1024} MB each`,
            },
            caption: {
              type: 'string',
              maxLength: MAX_CAPTION_LENGTH,
              description: 'Caption of the file part it follows (optional)',
            },
          },
          required: ['file'],
        },
        response: { 201: mediaItems, ...errors },
      },
    },
    async (request, reply) => {
      const ctx = requestContext(request);
      if (request.isMultipart()) {
        // Without a boundary the parts cannot be found: the client's mistake, not a failure of ours.
        if (!/;\s*boundary=/i.test(request.headers['content-type'] ?? ''))
          throw new AppError('malformed_request', 'multipart/form-data needs a boundary parameter');
        const session = await uploads.begin(ctx, request.params.id);
        let items;
        try {
          await readParts(request, session);
          // Behind the gateway: the streamed body must be the one it signed before any of it becomes visible.
          await signedBodyComplete(request);
          items = await session.commit();
        } catch (err) {
          // The refusal is what the client needs to hear; slots a failed abort leaves are released by the sweep.
          await session
            .abort()
            .catch((abortErr: unknown) => request.log.error({ err: abortErr }, 'could not undo a refused upload'));
          throw err;
        }
        return reply.code(201).send({ items });
      }
      if (!request.body)
        throw new AppError('validation_failed', 'Send image files as multipart/form-data, or a virtual tour as JSON');
      const tour = await gallery.addTour(ctx, request.params.id, request.body);
      return reply.code(201).send({ items: [tour] });
    },
  );

  r.get(
    '/v1/listings/:id/media',
    {
      preValidation: allowRoles(READERS, 'read media'),
      schema: {
        tags,
        operationId: 'listListingMedia',
        summary: "The listing's media, in order",
        params: idParams,
        querystring: mediaListQuery,
        response: { 200: mediaPage, ...errors },
      },
    },
    async (request) => gallery.list(callerOf(request), request.params.id, request.query),
  );

  r.put(
    '/v1/listings/:id/media/order',
    {
      preValidation: allowRoles(WRITERS, 'reorder media'),
      schema: {
        tags,
        operationId: 'reorderListingMedia',
        summary: 'Reorder: every media id of the listing (tours included), each once',
        params: idParams,
        body: mediaOrder,
        response: { 200: mediaItems, ...errors },
      },
    },
    async (request) => ({
      items: await gallery.reorder(requestContext(request), request.params.id, request.body.mediaIds),
    }),
  );

  r.get(
    '/v1/listings/:id/media/:mediaId',
    {
      schema: {
        tags,
        operationId: 'getListingMedia',
        summary: 'One media item',
        params: mediaParams,
        response: { 200: media, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(reply, await gallery.get(callerOf(request), request.params.id, request.params.mediaId)),
  );

  r.patch(
    '/v1/listings/:id/media/:mediaId',
    {
      preValidation: allowRoles(WRITERS, 'change media'),
      schema: {
        tags,
        operationId: 'updateListingMedia',
        summary: 'Change the caption or make an image primary (merge patch; If-Match optional)',
        params: mediaParams,
        body: mediaPatch,
        response: { 200: media, ...errors },
      },
    },
    async (request, reply) =>
      withEtag(
        reply,
        await gallery.update(
          requestContext(request),
          request.params.id,
          request.params.mediaId,
          request.body,
          ifMatchVersion(request),
        ),
      ),
  );

  r.delete(
    '/v1/listings/:id/media/:mediaId',
    {
      schema: {
        tags,
        operationId: 'deleteListingMedia',
        summary: 'Delete a media item and its files',
        params: mediaParams,
        response: { 200: deleted, ...errors },
      },
    },
    async (request) =>
      gallery.remove(requestContext(request), request.params.id, request.params.mediaId, ifMatchVersion(request)),
  );
}
