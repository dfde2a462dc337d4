/**
 * What subscribers need to know about each NATS subject beside its payload schema (in ./events): who
 * publishes it, who consumes it and how, and an example payload. The AsyncAPI document (`/asyncapi.json`)
 * is generated from this catalog and the subject map; a test checks every example against its schema.
 */
import type { Subject } from './events';
import { examples } from './examples';

export type Delivery = 'stream' | 'work-queue' | 'core';

export interface SubjectDoc {
  summary: string;
  description?: string;
  publishedBy: string;
  consumedBy: { consumer: string; what: string }[];
  example: Record<string, unknown>;
}

const at = '2026-05-04T15:30:00.000Z';
const listing = {
  id: 'lst_4kq9Zr2mXw',
  externalId: 'MLS-123',
  source: 'acme-mls',
  mlsNumber: '123',
  status: 'active',
  pricing: { listPrice: 450000, currency: 'USD', pricePerArea: 243.24 },
  propertyDetails: {
    propertyType: 'residential',
    propertySubType: 'single_family',
    bedrooms: 3,
    bathrooms: 2,
    livingArea: 1850,
    livingAreaUnits: 'sqft',
    features: ['garage'],
  },
  location: examples.listingCreate.location,
  media: { photoCount: 0, primaryPhoto: null, virtualTours: [] },
  listedAt: at,
  version: 1,
  createdAt: at,
  updatedAt: at,
};
const lead = {
  id: 'lead_8Jd2kPq0',
  name: 'Jordan Reyes',
  email: 'jordan.reyes@example.com',
  phone: '+15125550142',
  source: 'zillow',
  status: 'new',
  agentId: null,
  score: 42,
  scoreSource: 'engine',
  tags: [],
  propertyInterests: [{ listingId: 'lst_4kq9Zr2mXw', note: null }],
  createdAt: at,
  updatedAt: at,
  lastActivityAt: at,
  version: 1,
};
const base = (eventId: string, version = 1) => ({
  eventId,
  accountId: 'acc_0mwu4jbul000Wrrj',
  version,
  occurredAt: at,
});

const listingsIndexer = { consumer: 'listings (search indexer)', what: 'keeps the search index in step' };
const leadsProjection = {
  consumer: 'leads (listing summaries)',
  what: "keeps the listing summary shown with leads' property interests",
};
const gatewayAgentKeys = {
  consumer: 'gateway',
  what: "revokes the agent's API keys when it is deactivated or deleted (and tells every replica's key cache)",
};
const webhooks = { consumer: 'webhooks', what: "the account's change feed and webhook deliveries" };

export const subjectDocs: Partial<Record<Subject, SubjectDoc>> = {
  'listings.listing.created': {
    summary: 'A listing was created',
    publishedBy: 'listings',
    consumedBy: [listingsIndexer, leadsProjection, webhooks],
    example: { ...base('evt_lst_created_1'), listingId: listing.id, listing },
  },
  'listings.listing.updated': {
    summary: 'A listing changed (fields, status or its media summary)',
    publishedBy: 'listings',
    consumedBy: [listingsIndexer, leadsProjection, webhooks],
    example: {
      ...base('evt_lst_updated_2', 2),
      listingId: listing.id,
      listing: { ...listing, status: 'pending', version: 2 },
    },
  },
  'listings.listing.deleted': {
    summary: 'A listing was deleted',
    publishedBy: 'listings',
    consumedBy: [
      listingsIndexer,
      leadsProjection,
      { consumer: 'media', what: "removes the listing's media and files" },
      webhooks,
    ],
    example: { ...base('evt_lst_deleted_3', 3), listingId: listing.id },
  },
  'listings.bulk-job.submitted': {
    summary: 'Command: a stored bulk job is ready for a worker',
    description: 'One delivery per job; redelivered to another worker if the one holding it dies.',
    publishedBy: 'listings (API)',
    consumedBy: [{ consumer: 'listings (bulk workers)', what: 'apply the items and publish progress' }],
    example: { ...base('evt_job_submitted_1'), jobId: 'job_5hQ2mZ8x' },
  },
  'listings.bulk-job.completed': {
    summary: 'A bulk job ended (succeeded, partially failed or failed)',
    description:
      'Published once per job, through the same outbox write that ends it, so a crash never loses it. `job` is the job as `GET /v1/jobs/{id}` answers it, with its counts and per-item outcomes.',
    publishedBy: 'listings (bulk workers)',
    consumedBy: [{ consumer: 'webhooks', what: 'the `job.completed` event of the change feed and webhook deliveries' }],
    example: {
      ...base('job_5hQ2mZ8x:completed', 2),
      jobId: 'job_5hQ2mZ8x',
      job: {
        id: 'job_5hQ2mZ8x',
        type: 'listings.bulk_upsert',
        state: 'partially_failed',
        progress: { total: 2, processed: 2, succeeded: 1, failed: 1 },
        results: [{ index: 0, id: listing.id, action: 'created' }],
        errors: [
          {
            index: 1,
            externalId: 'MLS-124',
            code: 'validation_failed',
            message: 'The request is not valid',
            path: 'pricing.listPrice',
          },
        ],
        createdAt: at,
        startedAt: at,
        finishedAt: at,
      },
    },
  },
  'media.media.changed': {
    summary: "A listing's media changed: upload, processing, edit, reorder or delete",
    description: '`summary` is the media summary the listing shows; `version` is its media revision.',
    publishedBy: 'media',
    consumedBy: [{ consumer: 'listings', what: 'the media summary on the listing, then a reindex' }, webhooks],
    example: {
      ...base('evt_med_changed_4', 4),
      listingId: listing.id,
      change: 'processed',
      mediaIds: ['med_2b7XkQ'],
      summary: {
        photoCount: 1,
        primaryPhoto: {
          id: 'med_2b7XkQ',
          urls: {
            original: '/files/tok_Zq81/original',
            large: '/files/tok_Zq81/large',
            thumb: '/files/tok_Zq81/thumb',
          },
          caption: 'Front',
        },
        virtualTours: [],
      },
    },
  },
  'media.image.process': {
    summary: 'Command: make the renditions of one uploaded image',
    publishedBy: 'media (API)',
    consumedBy: [
      { consumer: 'media (rendition workers)', what: 'EXIF orientation, metadata stripped, large and thumb' },
    ],
    example: { ...base('evt_img_process_1'), listingId: listing.id, mediaId: 'med_2b7XkQ' },
  },
  'leads.lead.created': {
    summary: 'A lead was captured (a new person)',
    publishedBy: 'leads',
    consumedBy: [webhooks],
    example: { ...base('evt_lead_created_1'), leadId: lead.id, lead, changes: ['created'] },
  },
  'leads.lead.updated': {
    summary: "A lead's contact fields, status or tags changed (`changes` names them)",
    publishedBy: 'leads',
    consumedBy: [webhooks],
    example: {
      ...base('evt_lead_updated_3', 3),
      leadId: lead.id,
      lead: { ...lead, status: 'contacted', version: 3 },
      changes: ['status'],
    },
  },
  'leads.lead.assigned': {
    summary: 'A lead was assigned to an agent (or unassigned)',
    publishedBy: 'leads',
    consumedBy: [webhooks],
    example: {
      ...base('evt_lead_assigned_2', 2),
      leadId: lead.id,
      agentId: 'agt_7Hn2pQ',
      previousAgentId: null,
      assignment: {
        ruleId: 'rule_3Fk9',
        strategy: 'round_robin',
        reason: 'Rule "Downtown luxury" matched; next in rotation',
        assignedAt: at,
      },
    },
  },
  'leads.lead.scored': {
    summary: "A lead's score changed",
    publishedBy: 'leads',
    consumedBy: [webhooks],
    example: {
      ...base('evt_lead_scored_4', 4),
      leadId: lead.id,
      score: 57,
      previousScore: 42,
      scoreSource: 'engine',
    },
  },
  'leads.activity.recorded': {
    summary: "An activity was added to a lead's timeline",
    publishedBy: 'leads',
    consumedBy: [webhooks],
    example: {
      ...base('evt_act_recorded_1'),
      leadId: lead.id,
      leadVersion: 5,
      activityId: 'act_9Lm2',
      activity: {
        id: 'act_9Lm2',
        leadId: lead.id,
        type: 'call',
        customType: null,
        occurredAt: at,
        summary: 'Booked a showing for Saturday',
        listingId: listing.id,
        data: { durationSeconds: 240 },
        actor: { type: 'api_key', id: 'key_4Hq1', agentId: 'agt_7Hn2pQ' },
        recordedAt: at,
      },
    },
  },
  'leads.agent.updated': {
    summary: 'An agent changed (name, contact, capacity, areas or whether it is active)',
    description: '`active: false` means the agent no longer works leads; its API keys are revoked.',
    publishedBy: 'leads',
    consumedBy: [gatewayAgentKeys],
    example: { ...base('evt_agent_updated_2', 2), agentId: 'agt_7Hn2pQ', active: false, changes: ['active'] },
  },
  'leads.agent.deleted': {
    summary: 'An agent was deleted',
    publishedBy: 'leads',
    consumedBy: [gatewayAgentKeys],
    example: { ...base('evt_agent_deleted_3', 3), agentId: 'agt_7Hn2pQ' },
  },
  'leads.activity.record': {
    summary: "Command: record an activity on a lead's timeline",
    description:
      'Any service or integration bridge may publish it; the leads service records each `eventId` exactly once, and ignores a lead the account does not own.',
    publishedBy: 'any service or integration bridge',
    consumedBy: [{ consumer: 'leads', what: 'records the activity once, by eventId, and rescores the lead' }],
    example: {
      ...base('evt_bridge_0001'),
      leadId: lead.id,
      source: 'crm-bridge',
      activity: { type: 'email', summary: 'Opened the newsletter', occurredAt: at },
    },
  },
};

/** The transient progress notifications of bulk jobs (core NATS, not stored). */
export const jobProgressDoc = {
  address: 'jobs.{jobId}.progress',
  summary: "A bulk job's progress",
  description:
    'Core NATS, not durable: a subscriber that was not listening misses it (the job itself is always readable at `GET /v1/jobs/{id}`).',
  publishedBy: 'listings (bulk workers)',
  consumedBy: [
    { consumer: 'gateway', what: 'relays it to clients as server-sent events (`GET /v1/jobs/{id}/events`)' },
  ],
  example: {
    jobId: 'job_5hQ2mZ8x',
    state: 'running',
    progress: { total: 100, processed: 40, succeeded: 39, failed: 1 },
    startedAt: at,
    finishedAt: null,
  },
};
