// @estate/client: the typed client of the Estate listings and leads API. The request and response types are
// generated from the API's OpenAPI document (./schema.ts, by openapi-typescript; `npm run client:generate`) and
// the calls are made by openapi-fetch. This file is the thin layer by hand: the API key, retries on 429 and 503
// that honour Retry-After, an Idempotency-Key for every POST, an async iterator over any list, following a
// bulk job's events, image uploads, and verifying webhook signatures.
import { randomUUID } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };
export type Schemas = components['schemas'];

export interface EstateClientOptions {
  /** Where the API is, e.g. `http://127.0.0.1:3000` (no `/v1`). */
  baseUrl: string;
  /** An API key (`Authorization: Bearer <key>`). */
  apiKey: string;
  /** How many times a 429 or 503 answer is retried (default 3). */
  maxRetries?: number;
  /** Longest wait before a retry, whatever Retry-After says (default 60 s). */
  maxRetryDelayMs?: number;
  /** A fetch to use instead of the global one. */
  fetch?: (input: Request) => Promise<Response>;
}

type Get<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type JsonOk<O> = O extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type Page = { items: unknown[]; nextCursor: string | null };

/** The paths whose GET answers a page: `{ items, nextCursor, total }`. */
export type ListPath = {
  [P in keyof paths]: JsonOk<Get<P>> extends Page ? P : never;
}[keyof paths];
export type ListItem<P extends ListPath> = JsonOk<Get<P>> extends { items: (infer I)[] } ? I : never;
type ListParams<P extends ListPath> = Get<P> extends { parameters: infer X } ? X : never;
export type ListOptions<P extends ListPath> = {
  path?: ListParams<P> extends { path?: infer PP } ? PP : never;
  query?: Omit<NonNullable<ListParams<P> extends { query?: infer Q } ? Q : never>, 'cursor'>;
};

export type JobProgress = Schemas['JobProgress'];
const FINAL_JOB_STATES = new Set(['succeeded', 'partially_failed', 'failed']);

export interface ImageUpload {
  data: Blob | Uint8Array;
  filename?: string;
  /** `image/jpeg` or `image/png`; the server judges the bytes either way. */
  contentType?: string;
  caption?: string;
}

/** Every error answer, as thrown by `unwrap`, `list`, `followJob` and `uploadImages`. */
export class EstateApiError extends Error {
  /** The stable problem code to branch on (`listing_not_found`, `validation_failed`, ...); undefined without one. */
  readonly code: string | undefined;
  /** For people: what went wrong. */
  readonly detail: string | undefined;
  /** The request's id (also in `x-request-id`): quote it when asking for help. */
  readonly requestId: string | undefined;
  /** The bad fields of a 422, with their paths. */
  readonly errors: { path: string; message: string }[];

  constructor(
    readonly status: number,
    readonly problem: Schemas['Problem'] | undefined,
    requestId?: string | null,
  ) {
    super(problem ? `${status} ${problem.code}: ${problem.detail}` : `HTTP ${status}`);
    this.name = 'EstateApiError';
    this.code = problem?.code;
    this.detail = problem?.detail;
    this.requestId = problem?.requestId ?? requestId ?? undefined;
    this.errors = (problem as { errors?: { path: string; message: string }[] } | undefined)?.errors ?? [];
  }
}

const apiError = (response: Response, problem: unknown) =>
  new EstateApiError(response.status, problem as Schemas['Problem'] | undefined, response.headers.get('x-request-id'));

/** The answer of `POST /v1/leads`: the lead (admin keys) or a receipt `{ id, duplicate }` (integration keys). */
export type LeadCaptureAnswer = Schemas['LeadCaptured'] | Schemas['LeadCaptureReceipt'];

/** Narrows a capture answer to the whole lead (score, status, agent...); false for an integration key's receipt. */
export function isCapturedLead(answer: LeadCaptureAnswer): answer is Schemas['LeadCaptured'] {
  return 'status' in answer;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds or an HTTP date, as Retry-After allows; a short growing pause when the server gave none. */
function retryDelayMs(header: string | null, attempt: number, max: number): number {
  const seconds = header === null ? NaN : Number(header);
  const ms = Number.isFinite(seconds)
    ? seconds * 1000
    : header && !Number.isNaN(Date.parse(header))
      ? Date.parse(header) - Date.now()
      : 250 * 2 ** attempt;
  return Math.min(Math.max(ms, 0), max);
}

/** A fetch that retries 429 and 503 answers after Retry-After, the same request each time. */
function retrying(
  fetchFn: (input: Request) => Promise<Response>,
  maxRetries: number,
  maxDelayMs: number,
): (input: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const response = await fetchFn(attempt < maxRetries ? request.clone() : request);
      if ((response.status !== 429 && response.status !== 503) || attempt >= maxRetries) return response;
      await response.body?.cancel();
      await sleep(retryDelayMs(response.headers.get('retry-after'), attempt, maxDelayMs));
    }
  };
}

export type EstateClient = Client<paths> & {
  /** Every item of a list, page after page: `for await (const l of client.list('/v1/listings', { query }))`. */
  list<P extends ListPath>(path: P, options?: ListOptions<P>): AsyncGenerator<ListItem<P>>;
  /** A bulk job's progress events, from its state now to its final one. */
  followJob(jobId: string, options?: { signal?: AbortSignal }): AsyncGenerator<JobProgress>;
  /** Uploads images (multipart) to a listing; answers the created media items. */
  uploadImages(listingId: string, files: ImageUpload[]): Promise<Schemas['Media'][]>;
};

export function createEstateClient(options: EstateClientOptions): EstateClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const fetchFn = options.fetch ?? ((input: Request) => globalThis.fetch(input));
  const client = createClient<paths>({
    baseUrl,
    fetch: retrying(fetchFn, options.maxRetries ?? 3, options.maxRetryDelayMs ?? 60_000),
  });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${options.apiKey}`);
      // A retried POST must not create twice: the key is made once, before the first attempt.
      if (request.method === 'POST' && !request.headers.has('idempotency-key'))
        request.headers.set('idempotency-key', randomUUID());
      return request;
    },
  };
  client.use(auth);

  async function* list<P extends ListPath>(path: P, opts: ListOptions<P> = {}): AsyncGenerator<ListItem<P>> {
    let cursor: string | undefined;
    do {
      const get = client.GET as unknown as (
        p: string,
        init: { params: { path?: unknown; query?: Record<string, unknown> } },
      ) => Promise<{ data?: Page; error?: Schemas['Problem']; response: Response }>;
      const { data, error, response } = await get(path, {
        params: {
          path: opts.path,
          query: { ...(opts.query as Record<string, unknown>), ...(cursor ? { cursor } : {}) },
        },
      });
      if (!data) throw apiError(response, error);
      for (const item of data.items) yield item as ListItem<P>;
      cursor = data.nextCursor ?? undefined;
    } while (cursor);
  }

  async function* followJob(jobId: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<JobProgress> {
    let lastEventId: string | undefined;
    // A dropped connection is picked up again after the last event seen (the server sends only newer ones).
    for (let reconnects = 0; reconnects <= 5; reconnects++) {
      const response = await fetchFn(
        new Request(`${baseUrl}/v1/jobs/${encodeURIComponent(jobId)}/events`, {
          headers: {
            authorization: `Bearer ${options.apiKey}`,
            accept: 'text/event-stream',
            ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
          },
          signal: opts.signal,
        }),
      );
      if (response.status === 204) return;
      if (!response.ok || !response.body) {
        throw apiError(response, await response.json().catch(() => undefined));
      }
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
            else if (line.startsWith('id:')) lastEventId = line.slice(3).trim();
          }
          if (event !== 'progress' || data.length === 0) continue;
          const progress = JSON.parse(data.join('\n')) as JobProgress;
          yield progress;
          if (FINAL_JOB_STATES.has(progress.state)) return;
        }
      }
    }
    throw new Error(`The event stream of job ${jobId} kept breaking off`);
  }

  async function uploadImages(listingId: string, files: ImageUpload[]): Promise<Schemas['Media'][]> {
    const form = new FormData();
    for (const [i, f] of files.entries()) {
      const blob = f.data instanceof Blob ? f.data : new Blob([f.data], { type: f.contentType ?? 'image/jpeg' });
      form.append('file', blob, f.filename ?? `image-${i + 1}`);
      if (f.caption !== undefined) form.append('caption', f.caption);
    }
    const { data, error, response } = await client.POST('/v1/listings/{id}/media', {
      params: { path: { id: listingId } },
      body: form as never,
      bodySerializer: (body: unknown) => body as FormData,
    });
    if (!data) throw apiError(response, error);
    return data.items;
  }

  return Object.assign(client, { list, followJob, uploadImages });
}

/**
 * Checks a webhook delivery (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`) against
 * the endpoint's secret (`whsec_…`) and answers its parsed envelope; throws when the signature or timestamp is wrong.
 */
export function verifyWebhook<T = unknown>(
  secret: string,
  rawBody: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
): T {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) flat[k.toLowerCase()] = String(v);
  return new Webhook(secret).verify(rawBody, flat) as T;
}

/** Answers the data of an openapi-fetch result, or throws its problem as an EstateApiError. */
export function unwrap<D>(result: { data?: D; error?: unknown; response: Response }): D {
  if (result.data === undefined) throw apiError(result.response, result.error);
  return result.data;
}

/** Re-exported so receivers and scripts share the generated operation types by name. */
export type Operation<K extends keyof operations> = operations[K];
