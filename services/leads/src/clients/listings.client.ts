import type { Identity } from '@estate/contracts/accounts';
import { problem } from '@estate/contracts/errors';
import { listing, type Listing } from '@estate/contracts/listings';
import { signRequest } from '@estate/platform/auth';
import { AppError, DependencyUnavailable } from '@estate/platform/errors';

/**
 * Asks the listings service about a listing the leads service has not heard of from the events yet: a client that
 * creates a listing and captures a lead for it at once sees the listing in the lead's interests.
 * Distributed: over HTTP with the caller's signed identity; embedded: a direct call.
 */
export interface ListingLookup {
  /** The caller's listing, or null when it does not exist for them (unknown, deleted, another account's). */
  find(who: Identity, listingId: string, requestId?: string): Promise<Listing | null>;
}

/** The listings service over HTTP, as the caller (distributed profile). */
export class ListingsClient implements ListingLookup {
  constructor(private readonly options: { listingsUrl: string; signingSecret: string; timeoutMs?: number }) {}

  async find(who: Identity, listingId: string, requestId?: string): Promise<Listing | null> {
    const path = `/v1/listings/${encodeURIComponent(listingId)}`;
    let res: Response;
    try {
      res = await fetch(`${this.options.listingsUrl}${path}`, {
        headers: {
          accept: 'application/json',
          ...(requestId ? { 'x-request-id': requestId } : {}),
          ...signRequest(who, { caller: 'leads', secret: this.options.signingSecret, method: 'GET', url: path }),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 2000),
      });
    } catch (err) {
      throw new DependencyUnavailable('listings service', `${(err as Error).name}: ${(err as Error).message}`);
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.ok) {
      const parsed = listing.safeParse(body);
      if (parsed.success) return parsed.data;
      throw new AppError('bad_gateway', 'The listings service answered with something that is not a listing', {
        cause: parsed.error,
      });
    }
    const refused = problem.safeParse(body);
    if (refused.success && refused.data.code === 'dependency_unavailable')
      throw new DependencyUnavailable('listings service', refused.data.detail);
    // Not the caller's listing, or a role that may not read it.
    if (refused.success && (refused.data.code === 'listing_not_found' || refused.data.code === 'forbidden'))
      return null;
    throw new AppError('bad_gateway', `The listings service answered ${res.status}`, { cause: body });
  }
}
