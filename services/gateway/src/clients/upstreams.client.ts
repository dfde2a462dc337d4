import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, type ReadStream } from 'node:fs';
import { mkdtemp, open, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import replyFrom from '@fastify/reply-from';
import { bodyDigest, IDENTITY_HEADER, ORIGIN_HEADER, signRequest, SIGNATURE_HEADER } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { sendProblem, type OpenApiDoc } from '@estate/platform/http';
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest, type HTTPMethods } from 'fastify';

export interface Upstream {
  name: string;
  url: string;
  /** Route patterns (find-my-way syntax) this upstream serves. */
  routes: string[];
}

const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const STRIPPED_REQUEST_HEADERS = [
  'authorization',
  IDENTITY_HEADER,
  SIGNATURE_HEADER,
  ORIGIN_HEADER,
  'connection',
  // Every body is forwarded whole, with its length.
  'transfer-encoding',
  'idempotency-key',
];

export interface UpstreamUrls {
  listings: string;
  media: string;
  leads: string;
  webhooks: string;
}

/** Which service answers which paths in the distributed profile. */
export function upstreamsFor(urls: UpstreamUrls): Upstream[] {
  return [
    {
      name: 'listings',
      url: urls.listings,
      routes: [
        '/v1/listings',
        '/v1/listings/*',
        '/v1/jobs/*',
        '/v1/feeds',
        '/v1/feeds/*',
        '/reso/odata',
        '/reso/odata/*',
      ],
    },
    { name: 'media', url: urls.media, routes: ['/v1/listings/:id/media', '/v1/listings/:id/media/*', '/files/*'] },
    {
      name: 'leads',
      url: urls.leads,
      routes: ['/v1/leads', '/v1/leads/*', '/v1/agents', '/v1/agents/*', '/v1/routing/*', '/v1/scoring/*'],
    },
    {
      name: 'webhooks',
      url: urls.webhooks,
      // EntityEvent is the change feed's: a static path, chosen over listings' `/reso/odata/*`.
      routes: ['/v1/webhooks', '/v1/webhooks/*', '/v1/events', '/reso/odata/EntityEvent'],
    },
  ];
}

async function bufferBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

/** An upload as the gateway keeps it until it is forwarded: a file nobody else can open, its length and digest. */
interface SpooledUpload {
  size: number;
  digest: string;
}

const spooled = new WeakMap<object, SpooledUpload>();

/**
 * Streams an upload into a file of `dir` while counting and hashing it, and hands back a stream of that
 * file (already unlinked: nothing is left behind however the request ends). More than `limit` bytes fail
 * with Fastify's body-too-large error, answered 413 like any other body over its limit.
 */
async function spoolUpload(payload: Readable, dir: string, limit: number): Promise<ReadStream> {
  const path = join(dir, randomUUID());
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > limit) {
        done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      hash.update(chunk);
      done(null, chunk);
    },
  });
  // Not piped with pipeline(): a refused upload must leave the request open, for its 413 to be answered.
  const writing = pipeline(measure, createWriteStream(path, { flags: 'wx' }));
  payload.once('error', (err) => measure.destroy(err));
  payload.once('close', () => {
    if (!payload.readableEnded) measure.destroy(new Error('the upload broke off'));
  });
  payload.pipe(measure);
  try {
    try {
      await writing;
    } catch (err) {
      payload.unpipe(measure);
      throw err;
    }
    const handle = await open(path, 'r');
    const stream = handle.createReadStream();
    spooled.set(stream, { size, digest: hash.digest('base64url') });
    return stream;
  } finally {
    await unlink(path).catch(() => undefined);
  }
}

/**
 * Forwards requests to the services with the caller's identity in a signed header. Bodies pass
 * through untouched, as bytes: the signature covers their sha256, which must be known before the
 * first byte is forwarded, so an upload is streamed into a temporary file while it is hashed (never
 * held in memory) and forwarded from there. An answer that must be kept for Idempotency-Key replay is
 * buffered first.
 */
export async function proxyToUpstreams(
  app: FastifyInstance,
  options: {
    upstreams: Upstream[];
    signingSecret: string;
    jsonBodyLimit: number;
    uploadBodyLimit: number;
    /**
     * Where uploads wait to be forwarded (each file unlinked as soon as it is opened). By default a folder of its
     * own under the system's temporary folder, removed on close; a folder given here is the caller's and is left.
     */
    spoolDir?: string;
  },
): Promise<void> {
  const spoolDir = options.spoolDir ?? (await mkdtemp(join(tmpdir(), 'estate-gateway-uploads-')));
  if (!options.spoolDir) app.addHook('onClose', async () => rm(spoolDir, { recursive: true, force: true }));
  for (const upstream of options.upstreams) {
    await app.register(async (scope) => {
      // Bodies are forwarded as received: no re-encoding of JSON, uploads streamed.
      await scope.register(replyFrom, {
        base: upstream.url,
        undici: { connections: 128, keepAliveTimeout: 30_000 },
        disableRequestLogging: true,
      });
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        'multipart/form-data',
        { bodyLimit: options.uploadBodyLimit },
        async (request: FastifyRequest, payload: Readable) => {
          if (Number(request.headers['content-length']) > options.uploadBodyLimit)
            throw new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();
          return spoolUpload(payload, spoolDir, options.uploadBodyLimit);
        },
      );
      scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: options.jsonBodyLimit }, (_request, body, done) =>
        done(null, body),
      );
      // A spooled upload not (wholly) forwarded, because the request ended early or was refused: its file goes.
      const release = async (request: FastifyRequest) => {
        if (request.body && spooled.has(request.body)) (request.body as ReadStream).destroy();
      };
      scope.addHook('onResponse', release);
      scope.addHook('onRequestAbort', release);

      const forward = (request: FastifyRequest, reply: FastifyReply) => {
        const keep = !!request.idempotencyRecord;
        const upload = request.body ? spooled.get(request.body) : undefined;
        const bytes = typeof request.body === 'string' || Buffer.isBuffer(request.body) ? request.body : undefined;
        // A parsed body is sent as given; an upload's file stream is piped by the proxy itself.
        const raw =
          bytes !== undefined
            ? { body: bytes, contentType: request.headers['content-type'] ?? 'application/json' }
            : {};
        const digest = upload?.digest ?? bodyDigest(bytes);
        // What the proxy sends: the URL as WHATWG URL writes it (a quote in a RESO $filter becomes %27), and the
        // signature must cover exactly that.
        const sent = new URL(request.url, 'http://upstream.invalid');
        const forwardedUrl = `${sent.pathname}${sent.search}`;
        return reply.from(request.url, {
          // A 503 (an engine away) goes back to the client with its Retry-After at once; by default a GET
          // would be retried up to 10 times, holding the request for as long as the outage lasts.
          retryDelay: () => null,
          ...raw,
          rewriteRequestHeaders: (_req, headers) => {
            const out: Record<string, string | string[] | undefined> = { ...headers };
            for (const h of STRIPPED_REQUEST_HEADERS) delete out[h];
            if (upload) out['content-length'] = String(upload.size);
            out['x-request-id'] = request.id;
            out[ORIGIN_HEADER] = `${request.protocol}://${request.host}`;
            if (request.identity)
              Object.assign(
                out,
                signRequest(request.identity, {
                  caller: 'gateway',
                  secret: options.signingSecret,
                  method: request.method,
                  url: forwardedUrl,
                  digest,
                }),
              );
            return out as Record<string, string>;
          },
          onError: (errReply, { error }) => {
            request.log.error({ err: error, upstream: upstream.name }, 'upstream failed');
            sendProblem(
              errReply as FastifyReply,
              new AppError('bad_gateway', `The ${upstream.name} service did not answer`),
            );
          },
          ...(keep
            ? {
                onResponse: (_req, res, upstreamRes) => {
                  void bufferBody(upstreamRes.stream as NodeJS.ReadableStream).then(
                    (body) => res.removeHeader('content-length').send(body),
                    (err) =>
                      sendProblem(
                        res as FastifyReply,
                        new AppError('bad_gateway', `The ${upstream.name} service answer broke off`, { cause: err }),
                      ),
                  );
                },
              }
            : {}),
        });
      };
      for (const url of upstream.routes)
        scope.route({
          method: METHODS,
          url,
          handler: forward,
          schema: { hide: true },
          // Named in a 413: uploads are read up to their own limit.
          config: { multipartBodyLimit: options.uploadBodyLimit },
        });
    });
  }
}

/** How long a service may take to send its OpenAPI document (large, and not on any hot path). */
const DOCUMENT_TIMEOUT_MS = 10_000;

/**
 * The services' own OpenAPI documents, folded into the gateway's, fetched again on each call. A service that does
 * not answer in time keeps the last document it sent; one never heard from is left out.
 */
export function upstreamDocuments(urls: string[]): () => Promise<OpenApiDoc[]> {
  const lastGood = new Map<string, OpenApiDoc>();
  return async () => {
    const docs = await Promise.all(
      urls.map(async (url) => {
        try {
          const res = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(DOCUMENT_TIMEOUT_MS) });
          if (res.ok) lastGood.set(url, (await res.json()) as OpenApiDoc);
        } catch {
          // Down or slow: its last document stands in.
        }
        return lastGood.get(url);
      }),
    );
    return docs.filter((d): d is OpenApiDoc => d !== undefined);
  };
}

/** Throws unless the service answers its readiness probe. */
export async function upstreamReady(name: string, url: string): Promise<void> {
  const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1500) });
  if (!res.ok) throw new Error(`${name} answered ${res.status}`);
}
