import { z } from 'zod';
import { listing } from './listings';

/** Fields every durable event carries. */
export const eventBase = {
  eventId: z.string().min(1),
  accountId: z.string().min(1),
  version: z.number().int().min(1),
  occurredAt: z.string(),
};

export const listingChanged = z.object({
  ...eventBase,
  listingId: z.string(),
  listing: listing.describe('The listing as it is after the change'),
});
export const listingDeleted = z.object({ ...eventBase, listingId: z.string() });

/**
 * Every subject, its payload schema and the JetStream stream that holds it.
 * `publish`/`subscribe` are typed from this map and validate against it at run time.
 */
export const subjects = {
  'listings.listing.created': { schema: listingChanged, stream: 'LISTINGS' },
  'listings.listing.updated': { schema: listingChanged, stream: 'LISTINGS' },
  'listings.listing.deleted': { schema: listingDeleted, stream: 'LISTINGS' },
} as const;

export type Subject = keyof typeof subjects;
export type EventPayload<S extends Subject> = z.infer<(typeof subjects)[S]['schema']>;

/** JetStream streams: which subjects each captures and whether it is a work queue (one delivery per message). */
export const streams = {
  LISTINGS: { subjects: ['listings.listing.>'], workQueue: false },
} as const;
export type StreamName = keyof typeof streams;
