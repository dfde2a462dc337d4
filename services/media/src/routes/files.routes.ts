import { fileParams, fileQuery } from '@estate/contracts/media';
import { AppError } from '@estate/platform/errors';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { RENDITIONS, type Rendition } from '../gallery.rules';
import type { GalleryService } from '../gallery.service';

/** A file's content never changes under its URL (new content means a new token): caches may keep it. */
const CACHE_CONTROL = 'public, max-age=31536000, immutable';

function etagOf(sha256: string): string {
  return `"${sha256.slice(0, 32)}"`;
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

/**
 * Image bytes at `/files/<token>/<original|large|thumb>` (`?format=webp` for the renditions),
 * without a key like a CDN's: the token is 128 random bits. Gone with the media (404).
 */
export async function fileRoutes(app: FastifyInstance, { gallery }: { gallery: GalleryService }) {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/files/:token/:rendition',
    {
      schema: {
        tags: ['media'],
        operationId: 'getMediaFile',
        summary: 'Image file (no key needed)',
        description:
          '`original` is the full-size image in its uploaded format, without metadata; `large` (≤1600 px) and `thumb` (≤320 px) are JPEG, or WebP with `?format=webp`. Long-lived cache headers and an ETag; 404 once the media is deleted.',
        security: [],
        params: fileParams,
        querystring: fileQuery,
        'x-responses': {
          200: {
            description: 'The image bytes, with `ETag` and long-lived `Cache-Control`',
            content: Object.fromEntries(
              ['image/jpeg', 'image/png', 'image/webp'].map((type) => [
                type,
                { schema: { type: 'string', format: 'binary' } },
              ]),
            ),
          },
          304: { description: 'Not modified (`If-None-Match` matched the ETag)' },
          404: {},
        },
      },
    },
    async (request, reply) => {
      const { token, rendition } = request.params;
      const notFound = new AppError('not_found', 'No such file');
      if (!(RENDITIONS as readonly string[]).includes(rendition)) throw notFound;
      const file = await gallery.openFile(token, rendition as Rendition, request.query.format);
      if (!file) throw notFound;
      const etag = etagOf(file.info.sha256);
      reply.header('etag', etag).header('cache-control', CACHE_CONTROL).header('x-content-type-options', 'nosniff');
      if (matches(request.headers['if-none-match'], etag)) {
        file.stream.destroy();
        return reply.code(304).send();
      }
      return reply.type(file.info.contentType).header('content-length', file.info.size).send(file.stream);
    },
  );
}
