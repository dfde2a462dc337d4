// The OpenAPI document is generated from the routes' zod schemas (fastify-type-provider-zod), then
// finished here in one pass over the whole document: the conventions every operation shares
// (problem+json errors, rate limits, request ids, versions, idempotency) are written once, so a
// route declares only what is its own and a new service's routes are described like the others.
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { PROBLEM_CONTENT_TYPE } from './problem';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

declare module 'fastify' {
  interface FastifySchema {
    /** A `multipart/form-data` request body (JSON Schema), documented beside the JSON one. */
    'x-multipart'?: Json;
    /** A `text/event-stream` answer: its description and the JSON schema (component name) of each event's data. */
    'x-event-stream'?: { description: string; event: string; dataSchema: string };
    /** Answers that are not JSON (files, 304), as OpenAPI response objects; errors among them become problem+json. */
    'x-responses'?: Record<number, Json>;
  }
}

/** Tags in the order `/docs` shows them, with what each covers. A route's tag must be one of these. */
export const API_TAGS: { name: string; description: string }[] = [
  {
    name: 'listings',
    description:
      'Properties for sale or lease, RESO-shaped: create, update by JSON merge patch, delete, search with filters, geo, full text and facets, and bulk loads of up to 100 per call.',
  },
  {
    name: 'jobs',
    description: 'Bulk jobs: their state, per-item results and errors, and their progress as server-sent events.',
  },
  {
    name: 'media',
    description:
      "A listing's photos (JPEG or PNG, processed into large and thumbnail renditions) and virtual tours, their order and primary image, and the public image URLs.",
  },
  {
    name: 'leads',
    description:
      'People interested in a property: capture (never duplicated by email or phone), search the pipeline, move along its stages, assign.',
  },
  {
    name: 'activities',
    description: "A lead's timeline: calls, emails, viewings, notes and what the system recorded.",
  },
  { name: 'agents', description: 'The agents leads are routed to, with their capacity and areas.' },
  {
    name: 'routing',
    description: "How leads reach agents: the team's rules in priority order, the default, a dry-run preview.",
  },
  { name: 'scoring', description: 'The weighted signals that score leads from 0 to 100.' },
  { name: 'webhooks', description: 'Endpoints that receive signed event deliveries, and their delivery log.' },
  { name: 'events', description: "The account's change feed: every change in order, to poll with a cursor." },
  { name: 'access', description: 'API keys of an account, and accounts (platform key only).' },
];

const STATUS_TEXT: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted: the work goes on in the background',
  '204': 'No content',
  '400': 'Malformed request: a body that is not JSON, a bad header or cursor',
  '401': 'No API key, or one that is not valid or was revoked',
  '403': "The key's role may not do this",
  '404': 'Not found, or not visible to this key',
  '405': 'Method not allowed',
  '409': 'Conflict with the current state',
  '412': '`If-Match` names another version than the current one',
  '413': 'Body too large',
  '414': 'URL too long',
  '415': 'Unsupported content type',
  '422': 'Invalid: `errors` lists each field and why',
  '429': 'Rate limited: retry after `Retry-After` seconds',
  '431': 'Request headers too large',
  '502': 'A service behind the gateway did not answer',
  '503': 'Not ready or shutting down; retry',
};

const HEADERS: Json = {
  XRequestId: {
    description: 'The request id (the one sent, when sane); error bodies carry it as `requestId`, logs as `requestId`.',
    required: true,
    schema: { type: 'string' },
  },
  RateLimitLimit: {
    description: 'Requests allowed per window for this key (per client address without a key).',
    schema: { type: 'integer' },
  },
  RateLimitRemaining: { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  RateLimitReset: { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  ETag: {
    description: 'The resource\'s version as an entity tag (`"3"`); send it back in `If-Match` to update safely.',
    schema: { type: 'string' },
  },
  Location: { description: 'Where the created resource (or the job) lives.', schema: { type: 'string' } },
};

/**
 * The request headers the conventions read, written out in every operation that reads them (not as
 * `#/components/parameters` references: readers that look for an operation's headers in its own `parameters` then
 * find them too).
 */
const PARAMETERS: Json = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe: kept 24 hours per API key and route; a replay answers the first response with the same status; the same key with another body is 422 `idempotency_key_reused`; a replay while the first still runs is 409.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
    example: '5f1c7f0e-8d4b-4b1e-9d57-1f3a2c6b9e10',
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'Apply only if the resource is still at this version (its `ETag`); otherwise 412 `version_mismatch`. `*` matches any version; anything else is 400 `malformed_request`.',
    // What versioning.ts accepts: an entity tag this API issued (weak form tolerated), or `*`.
    schema: { type: 'string', pattern: '^\\s*(\\*|(W/)?"?[0-9]{1,15}"?)\\s*$' },
    example: '"3"',
  },
};

export interface OpenApiFinish {
  /** Absolute base URL the API is reached at (PUBLIC_BASE_URL); the document's own origin when absent. */
  publicBaseUrl?: string;
}

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const pascal = (s: string) => s.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_m, _p, c: string) => c.toUpperCase());
const isKeyed = (path: string) => path === '/v1' || path.startsWith('/v1/');
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Every `$ref` in a JSON value, rewritten by `map`. */
function rewriteRefs(value: unknown, map: (ref: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, map));
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value))
      out[k] = k === '$ref' && typeof v === 'string' ? map(v) : rewriteRefs(v, map);
    return out;
  }
  return value;
}

function refsIn(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, into);
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/'))
        into.add(v.slice('#/components/schemas/'.length));
      else refsIn(v, into);
    }
  return into;
}

/** The component names reachable from `roots`, following refs inside components. */
function closure(roots: Set<string>, schemas: Json): Set<string> {
  const seen = new Set<string>();
  const todo = [...roots];
  while (todo.length) {
    const name = todo.pop()!;
    if (seen.has(name) || !schemas[name]) continue;
    seen.add(name);
    todo.push(...refsIn(schemas[name], new Set()));
  }
  return seen;
}

/**
 * A request schema's defaults, said in words instead of the `default` keyword: generators (openapi-typescript
 * among them) make a property with a default required, which would make clients send what the server fills in.
 */
function defaultsInWords(schema: unknown): void {
  if (Array.isArray(schema)) return schema.forEach(defaultsInWords);
  if (!schema || typeof schema !== 'object') return;
  const s = schema as Json;
  if ('default' in s && !s.$ref) {
    const said = `Default: \`${JSON.stringify(s.default)}\`.`;
    s.description = s.description ? `${String(s.description).replace(/\.?$/, '.')} ${said}` : said;
    delete s.default;
  }
  for (const [k, v] of Object.entries(s)) if (k !== 'examples' && k !== 'example') defaultsInWords(v);
}

/**
 * One component per type. The zod provider emits each registered schema twice, as read (`X`) and
 * as written (`XInput`: fields with a default are optional there). A type only written keeps its
 * input form under the plain name, a type only read its output form; one both read and written
 * keeps both only when they differ. Unused components go.
 */
function oneSchemaPerType(doc: Json): void {
  const schemas: Json = doc.components?.schemas ?? {};
  for (const s of Object.values(schemas)) {
    delete (s as Json).$id;
    delete (s as Json).$schema;
  }
  const requestRoots = new Set<string>();
  const responseRoots = new Set<string>();
  for (const item of Object.values<Json>(doc.paths ?? {}))
    for (const op of Object.values<Json>(item)) {
      refsIn(op.parameters, requestRoots);
      refsIn(op.requestBody, requestRoots);
      refsIn(op.responses, responseRoots);
      if (op['x-event-stream']) responseRoots.add(op['x-event-stream'].dataSchema);
    }
  const written = closure(requestRoots, schemas);
  const read = closure(responseRoots, schemas);
  const plain = (name: string) => name.replace(/Input$/, '');
  const rename = new Map<string, string>();
  const kept: Json = {};
  for (const name of Object.keys(schemas)) {
    if (name.endsWith('Input') && schemas[plain(name)]) continue;
    const inputName = `${name}Input`;
    const hasInput = inputName in schemas;
    const isWritten = hasInput ? written.has(inputName) : written.has(name);
    const isRead = read.has(name);
    if (!isWritten && !isRead) continue;
    if (!hasInput) {
      kept[name] = schemas[name];
      continue;
    }
    const same =
      JSON.stringify(rewriteRefs(schemas[inputName], plain)) === JSON.stringify(rewriteRefs(schemas[name], plain));
    if (isWritten && isRead && !same) {
      kept[name] = schemas[name];
      kept[`${name}Write`] = schemas[inputName];
      defaultsInWords(kept[`${name}Write`]);
      rename.set(inputName, `${name}Write`);
    } else {
      kept[name] = isWritten && !isRead ? schemas[inputName] : schemas[name];
      if (isWritten && !isRead) defaultsInWords(kept[name]);
      rename.set(inputName, name);
    }
  }
  const mapRef = (r: string) => {
    const name = r.startsWith('#/components/schemas/') ? r.slice('#/components/schemas/'.length) : undefined;
    return name && rename.has(name) ? `#/components/schemas/${rename.get(name)}` : r;
  };
  doc.components.schemas = rewriteRefs(
    Object.fromEntries(Object.entries(kept).sort(([a], [b]) => a.localeCompare(b))),
    mapRef,
  );
  doc.paths = rewriteRefs(doc.paths, mapRef);
}

/**
 * zod writes `.int()` as bounds of ±(2^53 - 1), which no contract means and which Swagger UI shows as every
 * integer's example: they go, wherever they are.
 */
function withoutSafeIntegerBounds(value: unknown): void {
  if (Array.isArray(value)) return value.forEach(withoutSafeIntegerBounds);
  if (!value || typeof value !== 'object') return;
  const s = value as Json;
  if (s.minimum === -Number.MAX_SAFE_INTEGER) delete s.minimum;
  if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
  for (const v of Object.values(s)) withoutSafeIntegerBounds(v);
}

/**
 * Errors the route declares (one list per service) that this operation cannot answer: 412 without `If-Match`,
 * 409 on a read, 413 and 415 where no body is read (GET, HEAD), 404 on a read of a collection.
 */
function cannotAnswer(method: string, op: Json, code: string): boolean {
  const read = method === 'get' || method === 'head';
  const params: Json[] = op.parameters ?? [];
  switch (code) {
    case '412':
      return !params.some((p) => p.in === 'header' && p.name === 'If-Match');
    case '409':
    case '413':
    case '415':
      return read;
    case '404':
      return read && !params.some((p) => p.in === 'path');
    default:
      return false;
  }
}

/** The schema a reference (or a nullable reference) stands for. */
function resolve(doc: Json, schema: Json | undefined): Json | undefined {
  let s = schema;
  for (let i = 0; s && i < 10; i++) {
    if (s.$ref) s = doc.components.schemas[String(s.$ref).split('/').pop()!];
    // A nullable schema (`anyOf` with null); a union of alternatives is a schema of its own (its examples are there).
    else if (s.anyOf && (s.anyOf as Json[]).some((x) => x.type === 'null'))
      s = (s.anyOf as Json[]).find((x) => x.type !== 'null');
    else break;
  }
  return s;
}

const successSchema = (doc: Json, op: Json): Json | undefined => {
  const ok = Object.entries<Json>(op.responses ?? {}).find(([code]) => code.startsWith('2'))?.[1];
  return resolve(doc, ok?.content?.['application/json']?.schema);
};
const isVersioned = (schema: Json | undefined) => !!schema?.properties?.version;

function finishOperation(doc: Json, path: string, method: string, op: Json, item: Json): void {
  const keyed = isKeyed(path);
  op.operationId ??= method + pascal(path.replace(/^\/v1/, '').replace(/[{}]/g, ''));
  if (!keyed) op.security = [];

  const params: Json[] = op.parameters ?? [];
  const success = successSchema(doc, op);
  if (keyed && method === 'post') params.push(structuredClone(PARAMETERS.IdempotencyKey));
  const versionedItem = isVersioned(successSchema(doc, item.get ?? {}));
  if (keyed && ((['patch', 'put'].includes(method) && isVersioned(success)) || (method === 'delete' && versionedItem)))
    params.push(structuredClone(PARAMETERS.IfMatch));
  if (params.length) op.parameters = params;

  const body = op.requestBody?.content;
  if (body?.['application/json']) {
    const json = body['application/json'];
    const example = resolve(doc, json.schema)?.examples?.[0];
    if (example !== undefined) json.example = example;
    // PATCH bodies are JSON merge patches; both media types are accepted.
    if (method === 'patch') body['application/merge-patch+json'] = { ...json };
  }
  if (op['x-multipart']) {
    // The route lets a null JSON body through for the multipart form; the JSON form itself is never null.
    const json = op.requestBody?.content?.['application/json'];
    const branches: Json[] | undefined = json?.schema?.anyOf;
    const nonNull = branches?.filter((b) => b.type !== 'null');
    if (json && nonNull?.length === 1) {
      json.schema = nonNull[0];
      const example = resolve(doc, json.schema)?.examples?.[0];
      if (example !== undefined) json.example = example;
    }
    op.requestBody ??= { required: true, content: {} };
    op.requestBody.content['multipart/form-data'] = { schema: op['x-multipart'] };
    delete op['x-multipart'];
  }

  const responses: Json = { ...op.responses, ...op['x-responses'] };
  delete op['x-responses'];
  for (const code of Object.keys(responses)) if (cannotAnswer(method, op, code)) delete responses[code];
  if (!Object.keys(responses).some((code) => code.startsWith('4'))) responses['400'] ??= {};
  // Any request can carry a longer URL or more headers than the server reads.
  responses['414'] ??= {};
  responses['431'] ??= {};
  if (keyed) {
    responses['401'] ??= {};
    responses['429'] ??= {};
    if (op.requestBody) {
      responses['400'] ??= {};
      responses['413'] ??= {};
      responses['415'] ??= {};
      responses['422'] ??= {};
    }
  }
  // Parameters are validated (unknown query parameters refused) wherever they are read.
  if (op.parameters?.some((p: Json) => p.in === 'query' || p.in === 'path')) responses['422'] ??= {};

  const stream = op['x-event-stream'];
  if (stream) {
    responses['200'] = {
      description: stream.description,
      content: {
        'text/event-stream': {
          // Each event's `data` line is JSON: JSON Schema says so with contentMediaType and contentSchema.
          schema: {
            type: 'string',
            description: `Events named \`${stream.event}\`, each \`data\` a JSON \`${stream.dataSchema}\`.`,
            contentMediaType: 'application/json',
            contentSchema: ref('schemas', stream.dataSchema),
          },
        },
      },
    };
    delete op['x-event-stream'];
  }
  for (const [code, response] of Object.entries<Json>(responses)) {
    if (!response.description || response.description === 'Default Response')
      response.description = STATUS_TEXT[code] ?? 'Answer';
    const status = Number(code);
    if (status >= 400) {
      response.content = { [PROBLEM_CONTENT_TYPE]: { schema: ref('schemas', 'Problem') } };
    }
    // An answer's example is its contract's, where the contract has one.
    const answer = response.content?.['application/json'];
    const answerExample = answer ? resolve(doc, answer.schema)?.examples?.[0] : undefined;
    if (answerExample !== undefined) answer.example = answerExample;
    const headers: Json = { 'x-request-id': ref('headers', 'XRequestId') };
    if (keyed) {
      headers['RateLimit-Limit'] = ref('headers', 'RateLimitLimit');
      headers['RateLimit-Remaining'] = ref('headers', 'RateLimitRemaining');
      headers['RateLimit-Reset'] = ref('headers', 'RateLimitReset');
    }
    if (status === 429) headers['Retry-After'] = ref('headers', 'RetryAfter');
    if (status >= 200 && status < 300 && isVersioned(resolve(doc, response.content?.['application/json']?.schema)))
      headers.ETag = ref('headers', 'ETag');
    if (
      status === 202 ||
      (status === 201 && resolve(doc, response.content?.['application/json']?.schema)?.properties?.id)
    )
      headers.Location = ref('headers', 'Location');
    response.headers = { ...response.headers, ...headers };
  }
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/** Shared conventions and the finishing touches, applied to the whole generated document. */
export function finishOpenApi(doc: Json, options: OpenApiFinish = {}): Json {
  doc.components ??= {};
  doc.components.schemas ??= {};
  oneSchemaPerType(doc);
  withoutSafeIntegerBounds(doc.components.schemas);
  withoutSafeIntegerBounds(doc.paths);
  doc.components.headers = { ...doc.components.headers, ...HEADERS };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const method of METHODS) if (item[method]) finishOperation(doc, path, method, item[method], item);
  const used = new Set<string>();
  for (const item of Object.values<Json>(doc.paths ?? {}))
    for (const op of Object.values<Json>(item)) for (const t of op.tags ?? []) used.add(t);
  doc.tags = API_TAGS.filter((t) => used.has(t.name));
  for (const t of used) if (!doc.tags.some((k: Json) => k.name === t)) doc.tags.push({ name: t, description: t });
  doc.servers = [
    options.publicBaseUrl
      ? { url: options.publicBaseUrl.replace(/\/+$/, ''), description: 'This deployment' }
      : { url: '/', description: 'The server that serves this document' },
  ];
  return doc;
}

/** The per-route transform: the zod provider's, nothing else (the document is finished as a whole). */
export const openApiTransform: SwaggerTransform = jsonSchemaTransform as SwaggerTransform;

export function openApiTransformObject(options: OpenApiFinish): SwaggerTransformObject {
  return (input) =>
    finishOpenApi(jsonSchemaTransformObject(input) as Json, options) as ReturnType<SwaggerTransformObject>;
}
