import type { Identity } from '@estate/contracts/accounts';
import { mediaPage, type Media } from '@estate/contracts/media';
import { signRequest, type RequestContext } from '@estate/platform/auth';
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
export class MediaClient implements MediaReader {
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

  private async gallery(who: Identity, listingId: string, requestId?: string): Promise<Media[]> {
    const path = `/v1/listings/${encodeURIComponent(listingId)}/media?limit=${PAGE}`;
    let res: Response;
    try {
      res = await fetch(`${this.options.mediaUrl}${path}`, {
        headers: {
          accept: 'application/json',
          ...(requestId ? { 'x-request-id': requestId } : {}),
          ...signRequest(who, { caller: 'listings', secret: this.options.signingSecret, method: 'GET', url: path }),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      throw new DependencyUnavailable('media service', `${(err as Error).name}: ${(err as Error).message}`);
    }
    // A listing the media service has not heard of yet has no media.
    if (res.status === 404) return [];
    const body: unknown = await res.json().catch(() => undefined);
    if (res.status === 503) throw new DependencyUnavailable('media service', `answered ${res.status}`);
    const parsed = mediaPage.safeParse(body);
    if (!res.ok || !parsed.success)
      throw new AppError('bad_gateway', `The media service answered ${res.status}`, { cause: body });
    return parsed.data.items;
  }
}

/**
 * Photos written to the galleries of listings the way an upload writes them (feed sync). Embedded: direct calls to
 * the media service's upload session and gallery; not composed in the distributed profile yet.
 */
export interface MediaWriter {
  /** Adds one image to the listing's gallery as a one-file upload does; the new media's id. */
  addPhoto(ctx: RequestContext, listingId: string, photo: { bytes: Buffer; caption?: string }): Promise<string>;
  /** Takes a media item out of the gallery (one already gone is fine). */
  removeMedia(ctx: RequestContext, listingId: string, mediaId: string): Promise<void>;
  /** Puts the gallery in this order (every media id of the listing, each once). */
  reorder(ctx: RequestContext, listingId: string, mediaIds: string[]): Promise<void>;
}
