import multipart from '@fastify/multipart';
import { AppError } from '@estate/platform/errors';
import { callerOf, requireSignedIdentity, signedBodyComplete, TRUSTED_CALLERS } from '@estate/platform/auth';
import { createHttpApp } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import { MediaClient } from '../src/clients/media.client';
import { alice, log } from './harness';

const SECRET = 'media-client-test-secret-0123456789abcdef';

/**
 * The media service's side of the feed's photo writes, as its process sees them: the signature checked with the
 * callers it trusts, the multipart body read as a stream and matched against the signed digest.
 */
describe('MediaClient writing galleries over HTTP (feeds of the distributed profile)', () => {
  let app: FastifyInstance;
  let client: MediaClient;
  const seen: Array<{ method: string; url: string; account: string; parts?: Array<[string, string]> }> = [];
  let answer: { status: number; body: unknown } | undefined;

  beforeAll(async () => {
    app = await createHttpApp({ service: 'media', logger: log });
    requireSignedIdentity(app, { secrets: [SECRET], callers: TRUSTED_CALLERS.media });
    await app.register(multipart);
    app.post('/v1/listings/:id/media', async (request, reply) => {
      const parts: Array<[string, string]> = [];
      for await (const part of request.parts()) {
        if (part.type === 'file') parts.push([part.fieldname, (await part.toBuffer()).toString('hex')]);
        else parts.push([part.fieldname, String(part.value)]);
      }
      await signedBodyComplete(request);
      seen.push({ method: 'POST', url: request.url, account: callerOf(request).accountId, parts });
      if (answer) return reply.code(answer.status).send(answer.body);
      return reply.code(201).send({ items: [media('med_new')] });
    });
    app.put('/v1/listings/:id/media/order', async (request) => {
      seen.push({ method: 'PUT', url: request.url, account: callerOf(request).accountId });
      return { items: (request.body as { mediaIds: string[] }).mediaIds.map(media) };
    });
    app.delete('/v1/listings/:id/media/:mediaId', async (request, reply) => {
      seen.push({ method: 'DELETE', url: request.url, account: callerOf(request).accountId });
      if ((request.params as { mediaId: string }).mediaId === 'med_gone')
        return reply.code(404).send({
          type: 'x',
          title: 'Not found',
          status: 404,
          detail: 'gone',
          code: 'media_not_found',
          requestId: 'r',
        });
      return { id: 'med_1', deleted: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    client = new MediaClient({ mediaUrl: `http://127.0.0.1:${port}`, signingSecret: SECRET });
  });
  afterAll(() => app.close());
  beforeEach(() => {
    seen.length = 0;
    answer = undefined;
  });

  const ctx = { who: alice, requestId: 'req-media-client' };
  const bytes = Buffer.from([0xff, 0xd8, 0xff, 0x0d, 0x0a, 0x2d, 0x2d, 0x00, 0xff, 0xd9]);

  it('uploads one photo and its caption as a signed multipart body, and returns the new media id', async () => {
    await expect(client.addPhoto(ctx, 'lst_1', { bytes, caption: 'Front, with "quotes"' })).resolves.toBe('med_new');
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/v1/listings/lst_1/media',
        account: alice.accountId,
        parts: [
          ['file', bytes.toString('hex')],
          ['caption', 'Front, with "quotes"'],
        ],
      },
    ]);
    await client.addPhoto(ctx, 'lst_1', { bytes });
    expect(seen[1].parts).toEqual([['file', bytes.toString('hex')]]);
  });

  it("turns the media service's refusal into its error, and anything else into a bad gateway", async () => {
    answer = {
      status: 409,
      body: {
        type: 'x',
        title: 'Too many',
        status: 409,
        detail: 'The gallery is full',
        code: 'media_limit_reached',
        requestId: 'r',
      },
    };
    const refused = await client.addPhoto(ctx, 'lst_1', { bytes }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'media_limit_reached', status: 409, detail: 'The gallery is full' });
    answer = { status: 500, body: { message: 'boom' } };
    await expect(client.addPhoto(ctx, 'lst_1', { bytes })).rejects.toMatchObject({ code: 'bad_gateway', status: 502 });
    answer = { status: 503, body: {} };
    await expect(client.addPhoto(ctx, 'lst_1', { bytes })).rejects.toMatchObject({ status: 503 });
  });

  it('reorders and removes; a photo already gone is no error', async () => {
    await client.reorder(ctx, 'lst_1', ['med_2', 'med_1']);
    await client.removeMedia(ctx, 'lst_1', 'med_1');
    await client.removeMedia(ctx, 'lst_1', 'med_gone');
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'PUT /v1/listings/lst_1/media/order',
      'DELETE /v1/listings/lst_1/media/med_1',
      'DELETE /v1/listings/lst_1/media/med_gone',
    ]);
  });

  it('says the media service is unavailable when it cannot be reached', async () => {
    const away = new MediaClient({ mediaUrl: 'http://127.0.0.1:1', signingSecret: SECRET });
    await expect(away.addPhoto(ctx, 'lst_1', { bytes })).rejects.toMatchObject({ status: 503 });
  });
});

function media(id: string) {
  return {
    id,
    listingId: 'lst_1',
    kind: 'image',
    caption: null,
    order: 0,
    isPrimary: true,
    status: 'processing',
    failureReason: null,
    width: 10,
    height: 10,
    bytes: 10,
    contentType: 'image/jpeg',
    url: null,
    urls: { original: '/files/t/original', large: '/files/t/large', thumb: '/files/t/thumb' },
    version: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}
