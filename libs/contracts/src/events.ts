import { z } from 'zod';
import { activity, activityCommandBody, assignment, leadEventView } from './leads';
import { job } from './jobs';
import { listing, listingMediaSummary } from './listings';
import { mediaChanges } from './media';

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

/** Command: a stored bulk job is ready for a worker (`version` is always 1: a job is submitted once). */
export const bulkJobSubmitted = z.object({ ...eventBase, jobId: z.string() });

/**
 * A bulk job ended, in any final state (`succeeded`, `partially_failed`, `failed`), with its counts and
 * per-item outcomes: `job` is the job as `GET /v1/jobs/:id` answers it. `version` is always 2 (a job
 * ends once); `eventId` is fixed per job, so a relay repeated after a crash is de-duplicated.
 */
export const bulkJobCompleted = z.object({ ...eventBase, jobId: z.string(), job });

/** The listing's media summary after a media change; `version` is the listing's media revision (older states are ignored). */
export const mediaChanged = z.object({
  ...eventBase,
  listingId: z.string(),
  change: z.enum(mediaChanges),
  mediaIds: z.array(z.string()),
  summary: listingMediaSummary,
});

/** Command: make the renditions of one uploaded image (`version`: the media item's when queued). */
export const imageProcess = z.object({ ...eventBase, listingId: z.string(), mediaId: z.string() });

/** A lead created, or its contact fields, status or tags changed (`changes` names them). */
export const leadChanged = z.object({
  ...eventBase,
  leadId: z.string(),
  lead: leadEventView,
  changes: z.array(z.string()),
});
export const leadAssigned = z.object({
  ...eventBase,
  leadId: z.string(),
  agentId: z.string().nullable(),
  previousAgentId: z.string().nullable(),
  assignment: assignment.nullable(),
});
export const leadScored = z.object({
  ...eventBase,
  leadId: z.string(),
  score: z.number(),
  previousScore: z.number(),
  scoreSource: z.enum(['engine', 'manual']),
});
/** An activity on a lead's timeline (`version` is always 1: activities never change; `leadVersion` is the lead's after it). */
export const activityRecorded = z.object({
  ...eventBase,
  leadId: z.string(),
  leadVersion: z.number().int(),
  activityId: z.string(),
  activity,
});
/** Command: record an activity on a lead, once per `eventId` (`version` is always 1). */
export const activityRecord = z.object({
  ...eventBase,
  leadId: z.string(),
  source: z.string().min(1).max(64).describe('The publishing service'),
  activity: activityCommandBody,
});

/**
 * An agent changed (`changes` names the fields). `active: false` means it no longer works leads: the
 * gateway revokes its API keys.
 */
export const agentUpdated = z.object({
  ...eventBase,
  agentId: z.string(),
  active: z.boolean(),
  changes: z.array(z.string()),
});
/** An agent was deleted: the gateway revokes its API keys. */
export const agentDeleted = z.object({ ...eventBase, agentId: z.string() });

/**
 * Every subject, its payload schema and the JetStream stream that holds it.
 * `publish`/`subscribe` are typed from this map and validate against it at run time.
 */
export const subjects = {
  'listings.listing.created': { schema: listingChanged, stream: 'LISTINGS' },
  'listings.listing.updated': { schema: listingChanged, stream: 'LISTINGS' },
  'listings.listing.deleted': { schema: listingDeleted, stream: 'LISTINGS' },
  'listings.bulk-job.submitted': { schema: bulkJobSubmitted, stream: 'LISTINGS_BULK_JOBS' },
  'listings.bulk-job.completed': { schema: bulkJobCompleted, stream: 'LISTINGS' },
  'media.media.changed': { schema: mediaChanged, stream: 'MEDIA' },
  'media.image.process': { schema: imageProcess, stream: 'MEDIA_JOBS' },
  'leads.lead.created': { schema: leadChanged, stream: 'LEADS' },
  'leads.lead.updated': { schema: leadChanged, stream: 'LEADS' },
  'leads.lead.assigned': { schema: leadAssigned, stream: 'LEADS' },
  'leads.lead.scored': { schema: leadScored, stream: 'LEADS' },
  'leads.activity.recorded': { schema: activityRecorded, stream: 'LEADS' },
  'leads.agent.updated': { schema: agentUpdated, stream: 'LEADS' },
  'leads.agent.deleted': { schema: agentDeleted, stream: 'LEADS' },
  'leads.activity.record': { schema: activityRecord, stream: 'LEADS_COMMANDS' },
} as const;

export type Subject = keyof typeof subjects;
export type EventPayload<S extends Subject> = z.infer<(typeof subjects)[S]['schema']>;

/** JetStream streams: which subjects each captures and whether it is a work queue (one delivery per message). */
export const streams = {
  LISTINGS: { subjects: ['listings.listing.>', 'listings.bulk-job.completed'], workQueue: false },
  LISTINGS_BULK_JOBS: { subjects: ['listings.bulk-job.submitted'], workQueue: true },
  MEDIA: { subjects: ['media.media.>'], workQueue: false },
  MEDIA_JOBS: { subjects: ['media.image.process'], workQueue: true },
  LEADS: { subjects: ['leads.lead.>', 'leads.activity.recorded', 'leads.agent.>'], workQueue: false },
  LEADS_COMMANDS: { subjects: ['leads.activity.record'], workQueue: true },
} as const;
export type StreamName = keyof typeof streams;
