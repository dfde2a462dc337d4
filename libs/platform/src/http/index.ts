import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { decorateIdentity } from '../auth';
import { requestSerializer } from '../logging';
import { installErrorHandling, PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './problem';
import { errorStatus, errorTitles } from '@estate/contracts/errors';
import type { Duplex } from 'node:stream';
import { installJsonBodyParsers } from './json-body';
import { responseSerializerCompiler } from './serializer';
import { installObservability, type ReadinessCheck } from './observability';
import { asyncApiDocument } from './asyncapi';
import { openApiTransform, openApiTransformObject } from './openapi';
import { mergeOpenApi, type OpenApiDoc } from './openapi-merge';

export { addEarlyCheck, PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './problem';
export { API_TAGS, finishOpenApi } from './openapi';
export { mergeOpenApi, type OpenApiDoc } from './openapi-merge';
export type { ReadinessCheck } from './observability';

export type App = FastifyInstance;

/** Bytes of request line and headers Node's parser reads (more is 414 or 431). */
const MAX_HEADER_BYTES = 64 * 1024;

/**
 * Whether the parser found a request too large because of its URL rather than its headers. It checks the size
 * where a piece ends: the request target ends right before ` HTTP/`; a piece with no line end and no blank is
 * the middle of a URL (a header that long and without a blank is taken for one too).
 */
function urlTooLong(packet: Buffer | undefined, parsed: number | undefined): boolean {
  if (!packet) return false;
  const at = parsed ?? packet.length;
  if (packet.subarray(at, at + 6).toString('latin1') === ' HTTP/') return true;
  if (packet.includes('\r\n')) return false;
  const text = packet.toString('latin1');
  return !/\s/.test(text.replace(/^[A-Z]{1,16} (?=\/)/, ''));
}

/** Node's HTTP parser refused the request before any route saw it: a problem+json answer, then the socket closes. */
function answerClientError(
  err: Error & { code?: string; rawPacket?: unknown; bytesParsed?: unknown },
  socket: Duplex,
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const code =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? urlTooLong(
          Buffer.isBuffer(err.rawPacket) ? err.rawPacket : undefined,
          typeof err.bytesParsed === 'number' ? err.bytesParsed : undefined,
        )
        ? 'uri_too_long'
        : 'headers_too_large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request_timeout'
        : 'malformed_request';
  const requestId = randomUUID();
  const body = JSON.stringify(
    problemBody(code, `The request could not be read (${err.code ?? 'parse error'})`, requestId),
  );
  const status = errorStatus[code];
  socket.end(
    [
      `HTTP/1.1 ${status} ${errorTitles[code]}`,
      `content-type: ${PROBLEM_CONTENT_TYPE}`,
      `content-length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${requestId}`,
      'x-content-type-options: nosniff',
      'connection: close',
      '',
      body,
    ].join('\r\n'),
  );
}

/**
 * Image URLs are stored and passed between services as paths (`/files/<token>/<rendition>`), so that the
 * data stays valid whatever host serves it; answers make them absolute with the public base URL. The
 * serializer writes compact JSON, so the three rendition keys are matched exactly.
 */
function absoluteFileUrls(app: FastifyInstance, base: string): void {
  const pattern = /"(original|large|thumb)":"\/files\//g;
  const replacement = `"$1":${JSON.stringify(base).slice(0, -1)}/files/`;
  app.addHook('onSend', async (_request, reply, payload) => {
    if (typeof payload !== 'string' || !String(reply.getHeader('content-type') ?? '').startsWith('application/json'))
      return payload;
    return payload.replace(pattern, replacement);
  });
}

/**
 * `/docs`' Content-Security-Policy: scripts, styles, fonts and fetches from this origin only, images also as
 * data URLs (the UI's icons), no plugins, no inline script, never framed. Inline styles stay allowed: the UI's
 * syntax highlighter writes `style` attributes.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

/**
 * Fastify's request log lines, the completion line naming the method and URL (redacted by the `req` serializer)
 * too: a line read alone says which request it ends.
 */
class RequestLogController extends LogController {
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error || this.isLogDisabled(request)) return super.requestCompleted(error, request, reply);
    reply.log.info(
      { req: { method: request.method, url: request.url }, res: reply, responseTime: reply.elapsedTime },
      'request completed',
    );
  }
}

/** The product's mark: a house, in the page's tab and its top bar. */
const MARK_PATH = 'M4 15 16 5l12 10v12H20v-8h-8v8H4z';
const MARK_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path fill="#2f6f4f" d="${MARK_PATH}"/></svg>`;

/** The top bar's logo: the mark and the API's name, in white on the bar. */
function logoSvg(title: string): string {
  const escaped = title.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${40 + title.length * 10}" height="32" viewBox="0 0 ${40 + title.length * 10} 32"><path fill="#ffffff" d="${MARK_PATH}"/><text x="38" y="22" fill="#ffffff" font-family="sans-serif" font-size="17">${escaped}</text></svg>`;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HttpAppOptions {
  service: string;
  logger: Logger;
  /** Largest JSON body accepted, in bytes. */
  bodyLimit?: number;
  /** Proxies allowed to name the client in `X-Forwarded-For` (TRUST_PROXY): a hop count or addresses; none when absent. */
  trustProxy?: number | string[];
  /** A request whose headers or body have not all arrived by then is answered 408 and its connection closed (30 s). */
  requestTimeoutMs?: number;
  /** Where clients reach the API (PUBLIC_BASE_URL): image URLs in answers and the document's server are absolute with it. */
  publicBaseUrl?: string;
  /** Dependencies that must answer for `/health/ready`. */
  readiness?: Record<string, ReadinessCheck>;
  /** Serve `/openapi.json` and `/docs` generated from the route schemas. */
  openapi?: {
    title: string;
    description?: string;
    version?: string;
    /** Documents to fold into this one (the distributed gateway adds its services' documents). */
    merge?: () => Promise<OpenApiDoc[]>;
  };
}

/**
 * A Fastify instance with the conventions every service shares: request ids (kept from
 * `x-request-id` when sane), zod validation and serialization, problem+json errors, health,
 * metrics and, when asked, OpenAPI docs. Routes are added by the caller.
 */
export async function createHttpApp(options: HttpAppOptions): Promise<FastifyInstance> {
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const app = Fastify({
    // Every line that carries the request's URL shows it with secret-looking query parameters redacted.
    loggerInstance: options.logger.child({}, { serializers: { req: requestSerializer } }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestIdHeader: false,
    // One child logger per request (Fastify's): pino makes it faster without options, which Fastify passes even empty.
    childLoggerFactory: (logger, bindings, opts) =>
      Object.keys(opts).length === 0 ? logger.child(bindings) : logger.child(bindings, opts),
    logController: new RequestLogController({
      requestIdLogLabel: 'requestId',
      // Probes and scrapes would drown the access log.
      disableRequestLogging: (request) => request.url.startsWith('/health/') || request.url === '/metrics',
    }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    },
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // A slow client (slowloris, a stalled upload) cannot hold a connection: headers and body must all arrive in
    // time. Node checks open connections every connectionsCheckingInterval.
    requestTimeout: timeoutMs,
    // Only named proxies may say who the client is: otherwise anyone could pick the address its requests count against.
    trustProxy:
      typeof options.trustProxy === 'number'
        ? (_address: string, hop: number) => hop < (options.trustProxy as number)
        : (options.trustProxy ?? false),
    http: {
      // A request line with an over-long query still reaches validation (422) rather than Node's 431.
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: timeoutMs,
      connectionsCheckingInterval: Math.min(1_000, timeoutMs),
    },
    // Ids are at most 64 characters: a longer path segment reaches validation (422) instead of the router's 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
    // Requests Node's HTTP parser refuses (headers or URL too long, malformed, too slow) answer problem+json too.
    clientErrorHandler: answerClientError,
    // Paths the router cannot decode answer problem+json like everything else.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
      return sendProblem(
        reply as FastifyReply,
        // The router's message repeats the path; the answer names the fault without echoing the caller's input.
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new AppError('validation_failed', 'A path segment is longer than any id this API issues')
          : new AppError('malformed_request', 'The path cannot be read (it is not valid percent-encoded UTF-8)'),
      );
    },
  }) as unknown as FastifyInstance;
  // JSON in, JSON out: anything else is 415 (the media service adds multipart for uploads).
  app.removeContentTypeParser('text/plain');
  installJsonBodyParsers(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  decorateIdentity(app);
  // First of all hooks: every answer, whatever refuses the request, carries the request id, and no browser
  // guesses another type than the one it declares. Hooks on every request that do not wait for anything take
  // Fastify's callback form: no promises per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  installErrorHandling(app);
  if (options.publicBaseUrl) absoluteFileUrls(app, options.publicBaseUrl);
  // Once the caller is known (the onRequest authentication hooks have run), every line logged for the request
  // names its account and API key (the key's id, never its secret).
  // The request's logger is its own (see childLoggerFactory): its bindings grow in place, no second child per request.
  app.addHook('preValidation', (request, _reply, done) => {
    const who = request.identity;
    if (who) (request.log as Logger).setBindings({ accountId: who.accountId, keyId: who.keyId });
    done();
  });

  if (options.openapi) {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: options.openapi.title,
          description: options.openapi.description,
          version: options.openapi.version ?? '1.0.0',
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        components: {
          securitySchemes: {
            apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer <key>`' },
          },
        },
        security: [{ apiKey: [] }],
      },
      transform: openApiTransform,
      transformObject: openApiTransformObject({ publicBaseUrl: options.publicBaseUrl }),
    });
    const merge = options.openapi.merge;
    let merged: OpenApiDoc | undefined;
    const document = async (): Promise<OpenApiDoc> => {
      const own = app.swagger() as unknown as OpenApiDoc;
      merged = merge ? mergeOpenApi(own, await merge()) : own;
      return merged;
    };
    app.get('/openapi.json', { schema: { hide: true } }, document);
    const events = asyncApiDocument({ title: options.openapi.title, version: options.openapi.version });
    app.get('/asyncapi.json', { schema: { hide: true } }, async () => events);
    await app.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      // The UI's own JSON route is synchronous: serve the last merged document (refreshed by /openapi.json).
      transformSpecification: (own) => merged ?? (own as OpenApiDoc),
      uiConfig: { url: '/openapi.json' },
      // The product's name and mark, not the UI's: the page title, the top bar and the browser tab.
      theme: {
        title: options.openapi.title,
        favicon: [{ filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: MARK_SVG }],
      },
      logo: { type: 'image/svg+xml', content: logoSvg(options.openapi.title), href: '/docs' },
      // The UI loads its own scripts and styles and the document from this origin, and nothing else.
      staticCSP: DOCS_CSP,
    });
  }
  installObservability(app, { service: options.service, checks: options.readiness ?? {} });
  return app;
}

export function typed(app: FastifyInstance) {
  return app.withTypeProvider<ZodTypeProvider>();
}
export { ifMatchVersion, setEtag, withEtag } from './versioning';
