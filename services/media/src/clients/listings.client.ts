import type { Identity } from '@estate/contracts/accounts';
import { problem } from '@estate/contracts/errors';
import { listing } from '@estate/contracts/listings';
import { signRequest } from '@estate/platform/auth';
import { AppError, DependencyUnavailable } from '@estate/platform/errors';

/** What the media service needs to know of a listing it has not heard of from the events yet. */
export interface ListingFound {
  accountId: string;
  version: number;
}

/**
 * Asks the listings service whether the caller has a listing: read-your-writes for a client that
 * creates a listing and uploads to it at once, before the listing's event reaches this service.
 * Distributed: over HTTP with the caller's signed identity; embedded: a direct call.
 */
export interface ListingLookup {
  /** The caller's listing, or null when it does not exist for them (unknown, deleted, another account's). */
  find(who: Identity, listingId: string, requestId?: string): Promise<ListingFound | null>;
}

/** The listings service over HTTP, as the caller (distributed profile). */
export class ListingsClient implements ListingLookup {
  constructor(private readonly options: { listingsUrl: string; signingSecret: string; timeoutMs?: number }) {}

  async find(who: Identity, listingId: string, requestId?: string): Promise<ListingFound | null> {
    const path = `/v1/listings/${encodeURIComponent(listingId)}`;
    let res: Response;
    try {
      res = await fetch(`${this.options.listingsUrl}${path}`, {
        headers: {
          accept: 'application/json',
          ...(requestId ? { 'x-request-id': requestId } : {}),
          ...signRequest(who, { caller: 'media', secret: this.options.signingSecret, method: 'GET', url: path }),
        },
        // A listings service slow under load still answers: better late than a refused upload.
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      // The cause in one line: a timeout's DOMException would otherwise fill the log.
      throw new DependencyUnavailable('listings service', `${(err as Error).name}: ${(err as Error).message}`);
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.ok) {
      const parsed = listing.safeParse(body);
      if (parsed.success) return { accountId: who.accountId, version: parsed.data.version };
      throw new AppError('bad_gateway', 'The listings service answered with something that is not a listing', {
        cause: parsed.error,
      });
    }
    const refused = problem.safeParse(body);
    // The listings service is up but its own store is not: as retryable here as there.
    if (refused.success && refused.data.code === 'dependency_unavailable')
      throw new DependencyUnavailable('listings service', refused.data.detail);
    // Not the caller's listing, or a role that may not read it: either way not theirs to add media to.
    if (refused.success && (refused.data.code === 'listing_not_found' || refused.data.code === 'forbidden'))
      return null;
    throw new AppError('bad_gateway', `The listings service answered ${res.status}`, { cause: body });
  }
}
