import type { Identity } from '@estate/contracts/accounts';
import { lead, type Lead } from '@estate/contracts/leads';
import { media, type Media } from '@estate/contracts/media';
import { signRequest } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { RetryLater } from '@estate/bus';
import type { z } from 'zod';

/**
 * Reads a resource as its `GET` answers it, for events that do not carry it whole. null when it is
 * gone (nothing to report). Embedded: direct calls into the services of the same process;
 * distributed: HTTP to the owning service with a signed identity, as the gateway calls it.
 */
export interface ResourceReader {
  lead(accountId: string, leadId: string): Promise<Lead | null>;
  media(accountId: string, listingId: string, mediaId: string): Promise<Media | null>;
}

/** The identity this service reads with: the account's, with admin rights, under a key id of its own. */
export const serviceIdentity = (accountId: string): Identity => ({
  accountId,
  keyId: 'service:webhooks',
  role: 'admin',
  agentId: null,
});

/** Runs a direct read, turning the service's not-found answer into null. */
export async function orNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}

export class HttpResourceReader implements ResourceReader {
  constructor(
    private readonly options: { urls: { leads: string; media: string }; signingSecret: string; timeoutMs?: number },
  ) {}

  lead(accountId: string, leadId: string): Promise<Lead | null> {
    return this.get(this.options.urls.leads, `/v1/leads/${encodeURIComponent(leadId)}`, accountId, lead);
  }

  media(accountId: string, listingId: string, mediaId: string): Promise<Media | null> {
    const path = `/v1/listings/${encodeURIComponent(listingId)}/media/${encodeURIComponent(mediaId)}`;
    return this.get(this.options.urls.media, path, accountId, media);
  }

  private async get<T>(base: string, path: string, accountId: string, schema: z.ZodType<T>): Promise<T | null> {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        headers: {
          accept: 'application/json',
          ...signRequest(serviceIdentity(accountId), {
            caller: 'webhooks',
            secret: this.options.signingSecret,
            method: 'GET',
            url: path,
          }),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      throw new RetryLater(`${base} did not answer: ${(err as Error).message}`, 5000);
    }
    if (res.status === 404) return null;
    const body: unknown = await res.json().catch(() => undefined);
    if (!res.ok) throw new RetryLater(`${base}${path} answered ${res.status}`, 5000);
    return schema.parse(body);
  }
}
