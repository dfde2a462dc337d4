import type { Identity } from '@estate/contracts/accounts';
import type { Feed, FeedCreate, FeedListQuery, FeedPatch } from '@estate/contracts/feeds';
import type { Job } from '@estate/contracts/jobs';
import type { FeedLedger } from '@estate/contracts/feeds';
import { LISTING_IDS } from './bulk.rules';
import { DEFAULT_REMOVALS } from './feed-sync.rules';
import { assertRole, type RequestContext } from '@estate/platform/auth';
import { AppError, notFound } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import type { SecretBox } from '@estate/platform/secrets';
import { updateVersioned, type Update } from '@estate/store';
import type { BulkJobDoc, BulkJobRepository } from './repositories/bulk-job.repository';
import { toJob } from './repositories/bulk-job.repository';
import type { FeedDoc, FeedRepository } from './repositories/feed.repository';

const ADMIN_ONLY = ['admin'] as const;
const ENDED: readonly string[] = ['succeeded', 'partially_failed', 'failed'];
/** Scheduled runs end with a complete key pull at most this often (SPEC §14: at most once a day). */
const RECONCILE_EVERY_MS = 24 * 60 * 60 * 1000;

/** How the listings service derives the key of feeds' stored credentials from its secret key. */
export const FEED_SECRETS_KEY = { salt: 'estate-listings', info: 'feed source credentials' } as const;

/** A feed as its owner sees it: never its secret. */
export function toFeed(doc: FeedDoc): Feed {
  const { auth } = doc;
  return {
    id: doc.id,
    name: doc.name,
    serviceRoot: doc.serviceRoot,
    resource: doc.resource,
    auth:
      auth.type === 'bearer'
        ? { type: 'bearer' }
        : {
            type: 'client_credentials',
            tokenUrl: auth.tokenUrl,
            clientId: auth.clientId,
            ...(auth.scope ? { scope: auth.scope } : {}),
          },
    originatingSystemName: doc.originatingSystemName,
    filter: doc.filter ?? null,
    budget: doc.budget,
    pageSize: doc.pageSize,
    removals: doc.removals ?? DEFAULT_REMOVALS,
    media: doc.media ?? false,
    schedule: doc.schedule ?? null,
    nextRunAt: doc.schedule ? (doc.nextRunAt ?? null) : null,
    enabled: doc.enabled,
    reconciledAt: doc.reconciledAt ?? null,
    cursor: doc.cursor ?? null,
    lastRunId: doc.lastRunId ?? null,
    version: doc.version,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

/** A new run's ledger, starting from the feed's committed cursor. */
export function openLedger(feed: FeedDoc, dryRun: boolean, reconcile = false): FeedLedger {
  return {
    dryRun,
    reconcile,
    cursorBefore: feed.cursor ?? null,
    cursorAfter: feed.cursor ?? null,
    fetched: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    failed: 0,
    keys: null,
    quarantined: 0,
    hidden: 0,
    entityEvents: null,
    restored: 0,
    removed: 0,
    mediaDownloaded: 0,
    mediaUnchanged: 0,
    mediaUploaded: 0,
    mediaRemoved: 0,
    mediaFailed: 0,
    requests: 0,
    retries: 0,
    restarts: 0,
    lagSeconds: null,
    durationMs: null,
    stopReason: null,
    ...(dryRun ? { preview: [] } : {}),
  };
}

/** Feeds (admin keys only) and their runs, which are `feed_sync` jobs taken up by the feed run worker. */
export class FeedsService {
  constructor(
    private readonly deps: {
      feeds: FeedRepository;
      jobs: BulkJobRepository;
      secrets: SecretBox;
      /** Why a source URL may not be reached (form, then resolved addresses), or null. */
      sourceRefusal: (url: string) => Promise<string | null>;
      /** Wakes the run worker of this process. */
      runs: { kick(): void };
      clock: () => Date;
    },
  ) {}

  async create(who: Identity, input: FeedCreate): Promise<Feed> {
    assertRole(who, ADMIN_ONLY, 'manage feeds');
    await this.checkSources(input.serviceRoot, input.auth);
    const now = this.deps.clock().toISOString();
    const doc = await this.deps.feeds.insert({
      id: newId('fed'),
      accountId: who.accountId,
      name: input.name,
      serviceRoot: input.serviceRoot,
      resource: input.resource,
      auth: this.sealed(input.auth),
      originatingSystemName: input.originatingSystemName ?? input.name,
      ...(input.filter ? { filter: input.filter } : {}),
      budget: input.budget,
      pageSize: input.pageSize,
      removals: input.removals,
      media: input.media,
      ...(input.schedule ? { schedule: input.schedule, nextRunAt: now } : {}),
      enabled: input.enabled,
      createdBy: { keyId: who.keyId, role: who.role },
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
    return toFeed(doc);
  }

  async list(who: Identity, query: FeedListQuery) {
    assertRole(who, ADMIN_ONLY, 'manage feeds');
    const page = await this.deps.feeds.list(who.accountId, query);
    return { ...page, items: page.items.map(toFeed) };
  }

  async get(who: Identity, id: string): Promise<Feed> {
    assertRole(who, ADMIN_ONLY, 'manage feeds');
    return toFeed(await this.owned(who, id));
  }

  async update(who: Identity, id: string, patch: FeedPatch, ifMatch?: number): Promise<Feed> {
    assertRole(who, ADMIN_ONLY, 'manage feeds');
    const current = await this.owned(who, id);
    await this.checkSources(patch.serviceRoot ?? current.serviceRoot, patch.auth);
    const saved = await updateVersioned({
      what: 'feed',
      ifMatch,
      read: () => this.owned(who, id),
      write: (doc) => {
        const update: Update & { $set: Record<string, unknown>; $unset: Record<string, true> } = {
          $set: { updatedAt: this.deps.clock().toISOString() },
          $unset: {},
        };
        for (const key of ['name', 'serviceRoot', 'budget', 'pageSize', 'removals', 'media', 'enabled'] as const)
          if (patch[key] !== undefined) update.$set[key] = patch[key];
        if (patch.auth) update.$set.auth = this.sealed(patch.auth);
        if (patch.schedule === null) {
          update.$unset.schedule = true;
          update.$unset.nextRunAt = true;
        } else if (patch.schedule !== undefined) {
          update.$set.schedule = patch.schedule;
          update.$set.nextRunAt = this.deps.clock().toISOString();
        }
        if (patch.filter === null) update.$unset.filter = true;
        else if (patch.filter !== undefined) update.$set.filter = patch.filter;
        // Another source or another selection: the position in the old one means nothing there.
        const moved =
          (patch.serviceRoot !== undefined && patch.serviceRoot !== doc.serviceRoot) ||
          (patch.filter !== undefined && (patch.filter ?? undefined) !== doc.filter);
        if (moved) {
          update.$unset.cursor = true;
          update.$unset.entityEvents = true;
        }
        return this.deps.feeds.updateAt(who.accountId, id, doc.version, update);
      },
    });
    return toFeed(saved);
  }

  async remove(who: Identity, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(who, ADMIN_ONLY, 'manage feeds');
    const current = await this.owned(who, id);
    if (ifMatch !== undefined && ifMatch !== current.version)
      throw new AppError('version_mismatch', `The feed is at version ${current.version}, not ${ifMatch}`);
    if (!(await this.deps.feeds.remove(who.accountId, id)))
      throw new AppError('feed_run_in_progress', `Feed ${id} has a run in progress; delete it once the run has ended`);
    return { id, deleted: true };
  }

  /** Queues a run (a `feed_sync` job); one run of a feed at a time. */
  /**
   * Starts the scheduled runs that are due (every replica's run worker asks at each poll): the replica that moves a
   * feed's `nextRunAt` starts its run, and the feed's one run at a time holds across replicas. A scheduled run ends
   * with a key reconciliation when the last one is a day old. How many were started.
   */
  async startDue(limit = 10): Promise<number> {
    const now = this.deps.clock();
    let started = 0;
    for (const feed of await this.deps.feeds.due(now, limit)) {
      const next = new Date(now.getTime() + feed.schedule!.everyMinutes * 60_000).toISOString();
      if (!(await this.deps.feeds.claimSchedule(feed.id, feed.nextRunAt!, next))) continue;
      const reconcile = !feed.reconciledAt || now.getTime() - Date.parse(feed.reconciledAt) >= RECONCILE_EVERY_MS;
      const who = { accountId: feed.accountId, keyId: feed.createdBy.keyId, role: feed.createdBy.role, agentId: null };
      try {
        await this.startRun({ who } as RequestContext, feed.id, { dryRun: false, reconcile }, true);
        started++;
      } catch (err) {
        // A run asked for by hand is going: this due time is skipped; the next one comes.
        if (!(err instanceof AppError && err.code === 'feed_run_in_progress')) throw err;
      }
    }
    return started;
  }

  /** Queues a run (a `feed_sync` job); one run of a feed at a time. `scheduled`: started by the feed's schedule. */
  async startRun(
    ctx: RequestContext,
    id: string,
    options: { dryRun: boolean; reconcile?: boolean },
    scheduled = false,
  ): Promise<Job> {
    if (!scheduled) assertRole(ctx.who, ADMIN_ONLY, 'run feeds');
    const feed = await this.owned(ctx.who, id);
    if (!feed.enabled) throw new AppError('feed_disabled', `Feed ${id} is disabled; enable it to run it`);
    const jobId = newId('job');
    let taken = await this.deps.feeds.takeRun(ctx.who.accountId, id, jobId);
    // The run recorded may have ended without releasing the feed: its process died between the two writes, or it is
    // releasing the feed right now. An ended run is replaced; a feed released meanwhile is taken.
    const stale = !taken && feed.activeRunId ? await this.deps.jobs.load(feed.activeRunId) : undefined;
    if (!taken && feed.activeRunId && stale && ENDED.includes(stale.state))
      taken =
        (await this.deps.feeds.takeRun(ctx.who.accountId, id, jobId, feed.activeRunId)) ??
        (await this.deps.feeds.takeRun(ctx.who.accountId, id, jobId));
    if (!taken)
      throw new AppError(
        'feed_run_in_progress',
        `Feed ${id} has a run in progress (${feed.activeRunId ?? 'starting'})`,
      );
    const now = this.deps.clock().toISOString();
    const job: BulkJobDoc = {
      id: jobId,
      type: 'feed_sync',
      accountId: ctx.who.accountId,
      listingIds: LISTING_IDS,
      submittedBy: feed.createdBy,
      ...(ctx.requestId ? { requestId: ctx.requestId } : {}),
      state: 'queued',
      progress: { total: 0, processed: 0, succeeded: 0, failed: 0 },
      results: [],
      errors: [],
      feedId: id,
      ledger: openLedger(taken, options.dryRun, options.reconcile ?? false),
      createdAt: now,
      version: 1,
    };
    try {
      await this.deps.jobs.insertRun(job);
    } catch (err) {
      await this.deps.feeds.releaseRun(id, jobId);
      throw err;
    }
    this.deps.runs.kick();
    return toJob(job);
  }

  async runs(who: Identity, id: string, query: FeedListQuery) {
    assertRole(who, ADMIN_ONLY, 'run feeds');
    await this.owned(who, id);
    return this.deps.jobs.runsOf(who.accountId, id, query);
  }

  /** The feed's secret, for the run worker. */
  secretOf(feed: FeedDoc): string {
    return this.deps.secrets.open(feed.auth.secretSealed);
  }

  private sealed(auth: FeedCreate['auth']): FeedDoc['auth'] {
    return auth.type === 'bearer'
      ? { type: 'bearer', secretSealed: this.deps.secrets.seal(auth.token) }
      : {
          type: 'client_credentials',
          tokenUrl: auth.tokenUrl,
          clientId: auth.clientId,
          ...(auth.scope ? { scope: auth.scope } : {}),
          secretSealed: this.deps.secrets.seal(auth.clientSecret),
        };
  }

  private async checkSources(serviceRoot: string, auth: FeedCreate['auth'] | undefined): Promise<void> {
    const checks: Array<[string, string]> = [['serviceRoot', serviceRoot]];
    if (auth?.type === 'client_credentials') checks.push(['auth.tokenUrl', auth.tokenUrl]);
    for (const [path, url] of checks) {
      const refusal = await this.deps.sourceRefusal(url);
      if (refusal)
        throw new AppError('validation_failed', `The feed's ${path} ${refusal}`, {
          errors: [{ path, message: `${refusal} (the server allows it with FEEDS_ALLOW_PRIVATE_SOURCES=1)` }],
        });
    }
  }

  /** The caller's feed (404 for another account's: existence never leaks). */
  private async owned(who: Identity, id: string): Promise<FeedDoc> {
    const doc = await this.deps.feeds.get(who.accountId, id);
    if (!doc) throw notFound('feed_not_found', 'Feed', id);
    return doc;
  }
}
