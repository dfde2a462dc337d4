import type { Identity } from '@estate/contracts/accounts';
import { randomBytes } from 'node:crypto';
import { problem } from '@estate/contracts/errors';
import { mediaItems, mediaPage, type Media } from '@estate/contracts/media';
import { bodyDigest, signRequest, type RequestContext } from '@estate/platform/auth';
import { AppError, DependencyUnavailable } from '@estate/platform/errors';

/**
 * The media of listings, for the RESO Web API's `Property('k')/Media` and `$expand=Media`. Distributed: over HTTP
 * with the caller's signed identity; embedded: a direct call to the media service's gallery.
 */
export interface MediaReader {
  /** The shown media of each listing, in display order; listings without media may be absent. */
  forListings(who: Identity, listingIds: readonly string[], requestId?: string): Promise<Record<string, Media[]>>;
}

/** A listing holds at most 50 images and 20 tours: one page of the gallery holds them all. */
const PAGE = 100;
const CONCURRENCY = 16;

/** The media service over HTTP (distributed profile): one gallery read per listing, several at once. */
export class MediaClient implements MediaReader, MediaWriter {
  constructor(private readonly options: { mediaUrl: string; signingSecret: string; timeoutMs?: number }) {}

  async forListings(
    who: Identity,
    listingIds: readonly string[],
    requestId?: string,
  ): Promise<Record<string, Media[]>> {
    const out: Record<string, Media[]> = {};
    let next = 0;
    const worker = async () => {
      while (next < listingIds.length) {
        const id = listingIds[next++];
        const items = await this.gallery(who, id, requestId);
        if (items.length > 0) out[id] = items;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, listingIds.length) }, worker));
    return out;
  }

  /** A one-file multipart upload, signed with its digest as the gateway signs an upload it forwards. */
  async addPhoto(ctx: RequestContext, listingId: string, photo: { bytes: Buffer; caption?: string }): Promise<string> {
    const boundary = `estate-${randomBytes(16).toString('hex')}`;
    const part = (headers: string) => Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`);
    const body = Buffer.concat([
      part('content-disposition: form-data; name="file"; filename="photo"\r\ncontent-type: application/octet-stream'),
      photo.bytes,
      Buffer.from('\r\n'),
      ...(photo.caption
        ? [part('content-disposition: form-data; name="caption"'), Buffer.from(`${photo.caption}\r\n`)]
        : []),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const res = await this.send(ctx, 'POST', galleryPath(listingId), {
      body,
      contentType: `multipart/form-data; boundary=${boundary}`,
      timeoutMs: UPLOAD_TIMEOUT_MS,
    });
    const parsed = mediaItems.safeParse(res.body);
    if (res.status !== 201 || !parsed.success || parsed.data.items.length !== 1) throw refusal(res);
    return parsed.data.items[0].id;
  }

  async removeMedia(ctx: RequestContext, listingId: string, mediaId: string): Promise<void> {
    const res = await this.send(ctx, 'DELETE', `${galleryPath(listingId)}/${encodeURIComponent(mediaId)}`);
    // Already gone is what was asked.
    if (res.status !== 200 && res.status !== 404) throw refusal(res);
  }

  async reorder(ctx: RequestContext, listingId: string, mediaIds: string[]): Promise<void> {
    const res = await this.send(ctx, 'PUT', `${galleryPath(listingId)}/order`, {
      body: Buffer.from(JSON.stringify({ mediaIds })),
      contentType: 'application/json',
    });
    if (res.status !== 200) throw refusal(res);
  }

  private async gallery(who: Identity, listingId: string, requestId?: string): Promise<Media[]> {
    const res = await this.send(
      { who, ...(requestId ? { requestId } : {}) },
      'GET',
      `${galleryPath(listingId)}?limit=${PAGE}`,
    );
    // A listing the media service has not heard of yet has no media.
    if (res.status === 404) return [];
    const parsed = mediaPage.safeParse(res.body);
    if (res.status !== 200 || !parsed.success) throw refusal(res);
    return parsed.data.items;
  }

  /** One signed call to the media service: its status and parsed JSON body (undefined when it has none). */
  private async send(
    ctx: RequestContext,
    method: string,
    path: string,
    send: { body?: Buffer; contentType?: string; timeoutMs?: number } = {},
  ): Promise<{ status: number; body: unknown }> {
    let res: Response;
    try {
      res = await fetch(`${this.options.mediaUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(send.contentType ? { 'content-type': send.contentType } : {}),
          ...(ctx.requestId ? { 'x-request-id': ctx.requestId } : {}),
          ...signRequest(ctx.who, {
            caller: 'listings',
            secret: this.options.signingSecret,
            method,
            url: path,
            digest: bodyDigest(send.body),
          }),
        },
        ...(send.body ? { body: send.body } : {}),
        signal: AbortSignal.timeout(send.timeoutMs ?? this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      throw new DependencyUnavailable('media service', `${(err as Error).name}: ${(err as Error).message}`);
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.status === 503) throw new DependencyUnavailable('media service', `answered ${res.status}`);
    return { status: res.status, body };
  }
}

const galleryPath = (listingId: string) => `/v1/listings/${encodeURIComponent(listingId)}/media`;

/** A photo of up to 10 MB travels to the media service on the same host or network. */
const UPLOAD_TIMEOUT_MS = 60_000;

/**
 * The media service's refusal as the error it is: its own code for a client error (a file that is not an image, a
 * full gallery), which the caller may treat as that photo's failure; a bad gateway for anything else.
 */
function refusal(res: { status: number; body: unknown }): AppError {
  const answer = problem.safeParse(res.body);
  if (res.status >= 400 && res.status < 500 && answer.success)
    return new AppError(answer.data.code, answer.data.detail, { cause: res.body });
  return new AppError('bad_gateway', `The media service answered ${res.status}`, { cause: res.body });
}

/**
 * Photos written to the galleries of listings the way an upload writes them (feed sync). Embedded: direct calls to
 * the media service's upload session and gallery; distributed: the same routes an API client calls, over HTTP.
 */
export interface MediaWriter {
  /** Adds one image to the listing's gallery as a one-file upload does; the new media's id. */
  addPhoto(ctx: RequestContext, listingId: string, photo: { bytes: Buffer; caption?: string }): Promise<string>;
  /** Takes a media item out of the gallery (one already gone is fine). */
  removeMedia(ctx: RequestContext, listingId: string, mediaId: string): Promise<void>;
  /** Puts the gallery in this order (every media id of the listing, each once). */
  reorder(ctx: RequestContext, listingId: string, mediaIds: string[]): Promise<void>;
}
