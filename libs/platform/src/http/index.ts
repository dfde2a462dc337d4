import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { decorateIdentity } from '../auth';
import { installErrorHandling } from './problem';
import { installJsonBodyParsers } from './json-body';
import { responseSerializerCompiler } from './serializer';
import { installObservability, type ReadinessCheck } from './observability';

export interface OpenApiDoc {
  paths?: Record<string, unknown>;
  components?: { schemas?: Record<string, unknown>; [k: string]: unknown };
  tags?: unknown[];
  [k: string]: unknown;
}

/** Folds other documents' paths and component schemas into `own` (first definition wins). */
export function mergeOpenApi(own: OpenApiDoc, others: OpenApiDoc[]): OpenApiDoc {
  const out: OpenApiDoc = {
    ...own,
    paths: { ...own.paths },
    components: { ...own.components, schemas: { ...own.components?.schemas } },
  };
  for (const doc of others) {
    for (const [path, item] of Object.entries(doc.paths ?? {})) out.paths![path] ??= item;
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {}))
      out.components!.schemas![name] ??= schema;
  }
  return out;
}

export { PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './problem';
export type { ReadinessCheck } from './observability';

export type App = FastifyInstance;

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HttpAppOptions {
  service: string;
  logger: Logger;
  /** Largest JSON body accepted, in bytes. */
  bodyLimit?: number;
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
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestIdHeader: false,
    logController: new LogController({
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
    routerOptions: { ignoreTrailingSlash: true },
  }) as unknown as FastifyInstance;
  // JSON in, JSON out: anything else is 415 (the media service adds multipart for uploads).
  app.removeContentTypeParser('text/plain');
  installJsonBodyParsers(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  decorateIdentity(app);
  installErrorHandling(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  if (options.openapi) {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: options.openapi.title,
          description: options.openapi.description,
          version: options.openapi.version ?? '1.0.0',
        },
        components: {
          securitySchemes: {
            apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer <key>`' },
          },
        },
        security: [{ apiKey: [] }],
      },
      transform: jsonSchemaTransform,
      transformObject: jsonSchemaTransformObject,
    });
    const merge = options.openapi.merge;
    let merged: OpenApiDoc | undefined;
    const document = async (): Promise<OpenApiDoc> => {
      const own = app.swagger() as unknown as OpenApiDoc;
      merged = merge ? mergeOpenApi(own, await merge()) : own;
      return merged;
    };
    app.get('/openapi.json', { schema: { hide: true } }, document);
    await app.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      // The UI's own JSON route is synchronous: serve the last merged document (refreshed by /openapi.json).
      transformSpecification: (own) => merged ?? (own as OpenApiDoc),
      uiConfig: { url: '/openapi.json' },
    });
  }
  installObservability(app, { service: options.service, checks: options.readiness ?? {} });
  return app;
}

export function typed(app: FastifyInstance) {
  return app.withTypeProvider<ZodTypeProvider>();
}
export { ifMatchVersion, setEtag, withEtag } from './versioning';
