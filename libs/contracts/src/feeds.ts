import { z } from 'zod';
import { page, pageQuery, single } from './common';
import { examples } from './examples';

/** The feed's position: the last record applied, in `$orderby=ModificationTimestamp,ListingKey` order. */
export const feedCursor = z
  .object({
    modificationTimestamp: z.string().describe('ModificationTimestamp of the last record applied'),
    listingKey: z.string().describe('Its ListingKey (breaks ties between records of one timestamp)'),
  })
  .meta({ id: 'FeedCursor' });
export type FeedCursor = z.infer<typeof feedCursor>;

const sourceUrl = z.url({ protocol: /^https?$/, error: 'must be an https URL' }).max(2048);

/** What can travel in an HTTP header as a credential: visible ASCII, no spaces or control characters. */
export const HEADER_TOKEN = /^[\x21-\x7e]+$/;

const bearerAuth = z.strictObject({
  type: z.literal('bearer'),
  token: z
    .string()
    .min(1)
    .max(4096)
    .regex(HEADER_TOKEN, 'must be visible ASCII characters without spaces (it is sent in an HTTP header)')
    .describe('Sent as `Authorization: Bearer <token>`; stored encrypted, never returned'),
});
const clientCredentialsAuth = z.strictObject({
  type: z.literal('client_credentials'),
  tokenUrl: sourceUrl.describe('OAuth2 token endpoint (https; private hosts refused as for `serviceRoot`)'),
  clientId: z.string().min(1).max(512),
  clientSecret: z.string().min(1).max(4096).describe('Stored encrypted, never returned'),
  scope: z.string().min(1).max(512).optional(),
});
export const feedAuth = z.discriminatedUnion('type', [bearerAuth, clientCredentialsAuth]).meta({ id: 'FeedAuth' });
export type FeedAuth = z.infer<typeof feedAuth>;

export const feedBudget = z
  .strictObject({
    requestsPerSecond: z.number().positive().max(100).describe('Requests to the source per second, at most'),
    requestsPerHour: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe('Requests to the source in any hour, at most; a run that reaches it stops and the next goes on'),
  })
  .meta({ id: 'FeedBudget' });
export type FeedBudget = z.infer<typeof feedBudget>;

export const feedRemovals = z
  .strictObject({
    quarantineRuns: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(3)
      .describe(
        'A listing missing from the feed is hidden (`sourceMissing`) and deleted once this many key reconciliations in a row found it missing',
      ),
    maxRemovedPercent: z
      .number()
      .min(0)
      .max(100)
      .default(5)
      .describe("A reconciliation that would take out more than this share of the feed's listings takes out none"),
  })
  .meta({ id: 'FeedRemovals' });
export type FeedRemovals = z.infer<typeof feedRemovals>;

export const feedSchedule = z
  .strictObject({
    everyMinutes: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .describe('A run starts this many minutes after the previous one started'),
  })
  .meta({ id: 'FeedSchedule' });
export type FeedSchedule = z.infer<typeof feedSchedule>;

const feedName = z.string().trim().min(1).max(100);
const feedFilter = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .describe("An extra `$filter` joined to the feed's own with `and`, e.g. `City eq 'Austin'`");

export const feedCreate = z
  .strictObject({
    name: feedName,
    serviceRoot: sourceUrl.describe(
      "The source's RESO Web API service root, e.g. `https://api.example.com/reso/odata` (https; private and loopback hosts are refused unless the server allows them)",
    ),
    resource: z.literal('Property').default('Property'),
    auth: feedAuth,
    originatingSystemName: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .optional()
      .describe("The `source` of the listings this feed writes (default: the feed's name); fixed once created"),
    filter: feedFilter.optional(),
    budget: feedBudget.default({ requestsPerSecond: 2 }),
    pageSize: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(200)
      .describe('Records asked per page (`Prefer: odata.maxpagesize`)'),
    removals: feedRemovals.default({ quarantineRuns: 3, maxRemovedPercent: 5 }),
    media: z
      .boolean()
      .default(false)
      .describe("Sync the records' photos (`$expand=Media`) into the listings' galleries"),
    schedule: feedSchedule
      .nullable()
      .default(null)
      .describe('Runs started unattended (the first at once); null: only runs asked for'),
    enabled: z.boolean().default(true).describe('A disabled feed takes no runs'),
  })
  .meta({ id: 'FeedCreate', examples: [examples.feedCreate] });
export type FeedCreate = z.infer<typeof feedCreate>;

/** JSON merge patch of a feed; a new `serviceRoot` or `filter` starts the next run from the beginning. */
export const feedPatch = z
  .strictObject({
    name: feedName.optional(),
    serviceRoot: sourceUrl.optional(),
    auth: feedAuth.optional().describe('Replaces the credentials whole'),
    filter: feedFilter.nullable().optional(),
    budget: feedBudget.optional(),
    pageSize: z.number().int().min(1).max(1000).optional(),
    removals: feedRemovals.optional(),
    media: z.boolean().optional(),
    schedule: feedSchedule.nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'FeedPatch', examples: [examples.feedPatch] });
export type FeedPatch = z.infer<typeof feedPatch>;

export const feed = z
  .object({
    id: z.string(),
    name: z.string(),
    serviceRoot: z.string(),
    resource: z.literal('Property'),
    auth: z
      .union([
        z.object({ type: z.literal('bearer') }),
        z.object({
          type: z.literal('client_credentials'),
          tokenUrl: z.string(),
          clientId: z.string(),
          scope: z.string().optional(),
        }),
      ])
      .describe('The kind of credentials, without the secret'),
    originatingSystemName: z.string().describe('The `source` of the listings this feed writes'),
    filter: z.string().nullable(),
    budget: feedBudget,
    pageSize: z.number().int(),
    removals: feedRemovals,
    media: z.boolean(),
    schedule: feedSchedule.nullable(),
    nextRunAt: z.string().nullable().describe('When the schedule starts the next run; null: no schedule'),
    enabled: z.boolean(),
    reconciledAt: z
      .string()
      .nullable()
      .describe('When a complete key pull last reconciled the listings with the feed; null: never'),
    cursor: feedCursor.nullable().describe('Where the next run starts; null: from the beginning'),
    lastRunId: z.string().nullable().describe('The job of the latest run'),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Feed' });
export type Feed = z.infer<typeof feed>;

export const feedPage = page(feed).meta({ id: 'FeedPage' });
export const feedListQuery = z.strictObject({ ...pageQuery });
export type FeedListQuery = z.infer<typeof feedListQuery>;

export const feedRunQuery = z.strictObject({
  dryRun: single(z.enum(['true', 'false']).default('false'))
    .transform((v) => v === 'true')
    .describe('`true`: fetch and report what would change, write nothing (not even the cursor)'),
  reconcile: single(z.enum(['true', 'false']).default('false'))
    .transform((v) => v === 'true')
    .describe(
      '`true`: after the changes, pull every key the feed has (`$select=ListingKey`) and quarantine or delete the listings it no longer has',
    ),
});
export type FeedRunQuery = z.infer<typeof feedRunQuery>;

/** What a dry run would do to one record (the first 100 of a run are listed). */
export const feedPreviewItem = z.object({
  listingKey: z.string(),
  action: z.enum(['create', 'update']),
  listingId: z.string().optional().describe('The listing it would update'),
  fields: z.array(z.string()).describe('Fields that would change (top-level groups and their fields)'),
});

/** The sync ledger of one run (a `feed_sync` job). */
export const feedLedger = z
  .object({
    dryRun: z.boolean(),
    cursorBefore: feedCursor.nullable(),
    cursorAfter: feedCursor.nullable().describe('Committed with each page: where the next run starts'),
    fetched: z.number().int().describe('Records received from the source'),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int().describe('Records whose mapped fields had not changed: not written'),
    failed: z.number().int().describe('Records refused (each in `errors`, the first 1000 listed)'),
    reconcile: z.boolean().describe('Whether the run ends with a complete key pull (removals)'),
    keys: z.number().int().nullable().describe('Keys the complete key pull received; null: no complete key pull'),
    quarantined: z
      .number()
      .int()
      .describe(
        'Listings hidden from search (`sourceMissing`) for the first time: missing from the key pull, or flagged by the source (`hidden`)',
      ),
    hidden: z
      .number()
      .int()
      .describe(
        'Records the source flags as not for display (`MlgCanView` false): never created, and a listing we have of them quarantined',
      ),
    entityEvents: z
      .number()
      .int()
      .nullable()
      .describe(
        "Records read from the source's EntityEvent (RCP-027) after the walk: a listing whose record it names and the source no longer has is quarantined. Null: the source has no EntityEvent, or the run did not read it",
      ),
    restored: z.number().int().describe('Quarantined listings back in the feed: shown again'),
    removed: z.number().int().describe('Listings deleted after missing for `removals.quarantineRuns` key pulls'),
    mediaDownloaded: z.number().int().describe('Photos downloaded (new, or changed at the source)'),
    mediaUnchanged: z
      .number()
      .int()
      .describe('Photos not downloaded (their timestamps had not moved) or downloaded with bytes we already had'),
    mediaUploaded: z.number().int().describe('Photos added to galleries'),
    mediaRemoved: z.number().int().describe('Photos the source no longer has, taken out of galleries'),
    mediaFailed: z.number().int().describe('Photo downloads that failed: the photo we have stays; retried next run'),
    requests: z.number().int().describe('Requests made to the source, retries and token requests included'),
    retries: z.number().int().describe('Requests repeated after a 429 or 503 (after its Retry-After)'),
    restarts: z.number().int().describe('Walks restarted from the cursor after an expired or refused nextLink'),
    lagSeconds: z
      .number()
      .nullable()
      .describe('Now minus the newest ModificationTimestamp seen, when the run ended; null when none was seen'),
    durationMs: z.number().int().nullable(),
    stopReason: z
      .string()
      .nullable()
      .describe('Why the run stopped before the end of the feed (request budget, source failure), or null'),
    preview: z.array(feedPreviewItem).optional().describe('Dry runs: what would change, the first 100 records'),
  })
  .meta({ id: 'FeedLedger' });
export type FeedLedger = z.infer<typeof feedLedger>;
export type FeedPreviewItem = z.infer<typeof feedPreviewItem>;
