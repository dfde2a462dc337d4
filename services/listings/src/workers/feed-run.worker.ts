import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { HEADER_TOKEN, type FeedLedger } from '@estate/contracts/feeds';
import { jobProgressSubject, type JobItemError } from '@estate/contracts/jobs';
import type { Bus, OutboxRelay } from '@estate/bus';
import { AppError, DependencyUnavailable } from '@estate/platform/errors';
import { listingFromReso } from '@estate/reso';
import type { Transaction } from '@estate/store';
import type { Logger } from 'pino';
import { itemError, markOf, progressOf } from '../bulk.rules';
import type { FeedSourceClient, SourceAnswer } from '../clients/feed-source.client';
import { SourceUnreachable } from '../clients/feed-source.client';
import {
  countRequest,
  hiddenBySource,
  ERRORS_KEPT,
  laterCursor,
  MAX_RETRIES,
  MAX_RETRY_AFTER_MS,
  PAGE_STEP,
  pageUrl,
  PREVIEW_KEPT,
  recordUrl,
  sourcePhotos,
  type SourcePhoto,
  readPage,
  retryAfterMs,
  runState,
  sourceRefusal,
  throttled,
  tokenRefusal,
  unsendableToken,
  walkStart,
  withinHourlyBudget,
  type Usage,
} from '../feed-sync.rules';
import type { ListingsService } from '../listings.service';
import type { ListingRepository } from '../repositories/listing.repository';
import type { MediaReader, MediaWriter } from '../clients/media.client';
import { FeedGallery, type GalleryRun } from './feed-gallery';
import { FeedRemovals } from './feed-removals';
import { RunHandedBack, RunStopped, WalkBroken, type Running } from './feed-run.state';
import type { FeedPhotosRepository } from '../repositories/feed-photos.repository';
import type { FeedsService } from '../feeds.service';
import type { ListingUpsertService } from '../listing-upsert.service';
import { ledgerOf, type BulkJobDoc, type BulkJobRepository } from '../repositories/bulk-job.repository';
import type { FeedDoc, FeedRepository } from '../repositories/feed.repository';

export interface FeedRunWorkerDeps {
  jobs: BulkJobRepository;
  feeds: FeedRepository;
  secrets: Pick<FeedsService, 'secretOf'>;
  upserts: Pick<ListingUpsertService, 'upsertRecord' | 'preview' | 'findRecord'>;
  /** Quarantine and removal of listings their feed no longer has. */
  listings: Pick<ListingsService, 'get' | 'writeSourceMissing' | 'remove'>;
  /** The account's listings of one feed source, for the key reconciliation. */
  feedListings: Pick<ListingRepository, 'ofSource'>;
  /** Feeds with `media`: what was synced of each listing's photos, and the galleries they go to (none: no photos). */
  photos?: { synced: FeedPhotosRepository; writer: MediaWriter; reader: MediaReader };
  source: FeedSourceClient;
  bus: Bus;
  outbox?: Pick<OutboxRelay, 'kick'>;
  clock: () => Date;
  log: Logger;
  /**
   * How a page's writes and the run's record of them commit: one transaction where the store has them (SQLite);
   * elsewhere each write on its own, the per-record marks on listings making a replayed page apply nothing twice.
   * The composition root chooses.
   */
  commitPage: Transaction;
  leaseMs?: number;
  /** How often open runs nobody holds are looked for (a run queued here is taken at once). */
  pollMs?: number;
  /** Starts the scheduled runs that are due (every poll). */
  schedule?: { startDue(): Promise<number> };
  /** Waits (Retry-After, the per-second budget); tests may shorten them. */
  sleep?: (ms: number) => Promise<void>;
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_POLL_MS = 2000;
/** Runs one process takes at once. */
const RUNS_AT_ONCE = 2;
/** Listings whose photos a run fetches again (failed downloads, interrupted syncs) before its walk. */
const PENDING_PHOTOS_PER_RUN = 100;

/**
 * Runs `feed_sync` jobs: walks the source in `ModificationTimestamp,ListingKey` order page by page, maps each record
 * by the RESO table read backwards and upserts it through the bulk write path; each page's writes are recorded on
 * the run (and the feed's cursor moved) as they commit, under the run's lease. A run whose worker dies is taken up
 * by any process once its lease lapses, from the last page recorded: a record is never applied twice (a page
 * replayed is recognised by the marks its writes left on the listings, or rolled back with its record).
 */
export class FeedRunWorker {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly leaseMs: number;
  private timer?: NodeJS.Timeout;
  private stopping = false;
  private readonly active = new Map<string, Promise<void>>();
  private polling?: Promise<void>;
  /** Where a feed with `media` writes its photos (none: no photos are synced). */
  private readonly gallery?: FeedGallery;
  private readonly removals: FeedRemovals;

  constructor(private readonly deps: FeedRunWorkerDeps) {
    this.removals = new FeedRemovals(deps, {
      fetchPage: (state, url, following, optional) => this.fetchPage(state, url, following, optional),
      stillHeld: (state) => this.stillHeld(state),
    });
    if (deps.photos) this.gallery = new FeedGallery({ ...deps.photos, source: deps.source });
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  }

  start(): void {
    this.stopping = false;
    this.timer = setInterval(() => this.kick(), this.deps.pollMs ?? DEFAULT_POLL_MS);
    this.kick();
  }

  /** Looks for runs to take now. */
  kick(): void {
    if (this.stopping || this.polling) return;
    this.polling = this.poll()
      .catch((err: unknown) => {
        // An engine away is expected and retried at the next poll: one line, no stack, while it lasts.
        if (err instanceof DependencyUnavailable)
          this.deps.log.warn(
            { dependency: err.dependency, reason: err.message },
            'looking for feed runs waits; will retry',
          );
        else this.deps.log.error({ err }, 'looking for feed runs failed');
      })
      .finally(() => (this.polling = undefined));
  }

  /** Stops taking runs; a run in progress stops after its page and is left for the next taker. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.polling;
    await Promise.allSettled(this.active.values());
  }

  /** Resolves when the runs this worker holds have ended or been handed back (tests). */
  async idle(): Promise<void> {
    await this.polling;
    await Promise.allSettled(this.active.values());
  }

  private async poll(): Promise<void> {
    await this.deps.schedule?.startDue();
    if (this.active.size >= RUNS_AT_ONCE) return;
    const open = await this.deps.jobs.claimableRuns(this.deps.clock(), RUNS_AT_ONCE);
    for (const candidate of open) {
      if (this.active.size >= RUNS_AT_ONCE || this.stopping || this.active.has(candidate.id)) continue;
      const claimed = await this.deps.jobs.claim(
        candidate.id,
        this.owner,
        this.deps.clock(),
        this.leaseMs,
        !candidate.startedAt,
      );
      if (!claimed) continue;
      const running = this.run(claimed)
        .catch((err: unknown) => this.deps.log.error({ err, jobId: claimed.id }, 'feed run failed'))
        .finally(() => {
          this.active.delete(claimed.id);
          this.kick();
        });
      this.active.set(claimed.id, running);
    }
  }

  private async run(claimed: BulkJobDoc): Promise<void> {
    const log = this.deps.log.child({ jobId: claimed.id, feedId: claimed.feedId });
    const feed = claimed.feedId ? await this.deps.feeds.load(claimed.feedId) : null;
    const started = Date.now();
    if (!feed || feed.activeRunId !== claimed.id) {
      await this.end(claimed, { stopReason: 'the feed was deleted', sourceFailed: true }, started, log);
      return;
    }
    const state: Running = {
      job: claimed.ledger ? { ...claimed, ledger: ledgerOf(claimed.ledger) } : claimed,
      feed,
      ctx: {
        who: {
          accountId: claimed.accountId,
          keyId: claimed.submittedBy.keyId,
          role: claimed.submittedBy.role,
          agentId: null,
        },
        requestId: claimed.requestId,
      },
      usage: feed.usage ?? [],
      lastRequestAt: 0,
      leaseLost: false,
    };
    const renewal = setInterval(
      () => {
        this.deps.jobs.renew(claimed.id, this.owner, this.deps.clock(), this.leaseMs).then(
          (held) => (state.leaseLost ||= !held),
          (err: unknown) => log.warn({ err }, 'feed run lease renewal failed'),
        );
      },
      Math.max(100, Math.floor(this.leaseMs / 3)),
    );
    log.info(
      { from: claimed.walk ?? claimed.ledger?.cursorBefore ?? null, attempt: claimed.attempts },
      'feed run started',
    );
    try {
      await this.removals.startFollowingEvents(state);
      await this.walk(state);
      await this.removals.followEvents(state);
      if (state.job.ledger!.reconcile) await this.removals.reconcile(state);
      await this.end(state.job, { stopReason: null, sourceFailed: false }, started, log, state.usage);
    } catch (err) {
      if (err instanceof RunHandedBack) {
        await this.deps.jobs.release(claimed.id, this.owner).catch(() => undefined);
        log.info({ at: state.job.walk }, 'feed run handed back');
        return;
      }
      const stopped =
        err instanceof RunStopped
          ? err
          : new RunStopped(err instanceof SourceUnreachable ? err.message : 'the run failed (see the logs)', true);
      // A source that cannot be reached is the feed's condition, told in the run's ledger; anything else is ours.
      if (err instanceof SourceUnreachable) log.warn({ reason: err.message }, 'feed run stopped: source unreachable');
      else if (!(err instanceof RunStopped)) log.error({ err }, 'feed run stopped');
      if (stopped.retryAt) await this.postpone(state.feed, stopped.retryAt, log);
      await this.end(
        state.job,
        { stopReason: stopped.reason, sourceFailed: stopped.sourceFailed },
        started,
        log,
        state.usage,
      );
    } finally {
      clearInterval(renewal);
    }
  }

  /** Walks from where the run stands to the end of the feed, restarting from the position when a nextLink breaks. */
  private async walk(state: Running): Promise<void> {
    const { feed } = state;
    const media = this.syncsPhotos(state);
    if (media) await this.retryPhotos(state);
    let url = pageUrl(
      feed.serviceRoot,
      feed.resource,
      walkStart(state.job.walk, state.job.ledger!.cursorBefore),
      feed.filter,
      media,
    );
    let following = false;
    for (;;) {
      if (this.stopping || state.leaseLost) throw new RunHandedBack();
      let answer: SourceAnswer;
      try {
        answer = await this.fetchPage(state, url, following);
      } catch (err) {
        if (!(err instanceof WalkBroken)) throw err;
        await this.recordPage(state, [], { restarted: true });
        url = pageUrl(
          feed.serviceRoot,
          feed.resource,
          walkStart(state.job.walk, state.job.ledger!.cursorBefore),
          feed.filter,
          media,
        );
        following = false;
        continue;
      }
      const page = readPage(answer, new URL(url).pathname);
      if ('problem' in page) throw new RunStopped(page.problem, true);
      const records = page.value.filter((r): r is Record<string, unknown> => !!r && typeof r === 'object');
      await this.recordPage(state, records.slice(0, PAGE_STEP), {});
      for (let from = PAGE_STEP; from < records.length; from += PAGE_STEP) {
        // Requests that arrived meanwhile are answered before the next step.
        await new Promise((resolve) => setImmediate(resolve));
        this.stillHeld(state);
        await this.recordPage(state, records.slice(from, from + PAGE_STEP), {});
      }
      const next = page.nextLink;
      if (typeof next !== 'string' || records.length === 0) return;
      url = new URL(next, url).toString();
      following = true;
    }
  }

  private syncsPhotos(state: Running): boolean {
    return !!state.feed.media && !!this.gallery && !state.job.ledger!.dryRun;
  }

  private galleryRun(state: Running): GalleryRun {
    return { ctx: state.ctx, accountId: state.job.accountId, feedId: state.feed.id, ledger: state.job.ledger! };
  }

  /** Listings whose photo sync failed or was interrupted: their media fetched again (fresh MediaURLs) and synced. */
  private async retryPhotos(state: Running): Promise<void> {
    const pending = await this.deps.photos!.synced.pending(state.feed.id, PENDING_PHOTOS_PER_RUN);
    for (const doc of pending) {
      this.stillHeld(state);
      const url = recordUrl(state.feed.serviceRoot, state.feed.resource, doc.listingKey);
      const page = readPage(await this.fetchPage(state, url, false), new URL(url).pathname);
      if ('problem' in page) throw new RunStopped(page.problem, true);
      const record = page.value[0] as Record<string, unknown> | undefined;
      const photos = record ? sourcePhotos(record) : undefined;
      // Gone from the feed: removals decide about the listing; its photos stay as they are.
      if (!record || !photos) continue;
      const changedAt = typeof record.PhotosChangeTimestamp === 'string' ? record.PhotosChangeTimestamp : undefined;
      await this.gallery!.sync(this.galleryRun(state), doc.id, photos, changedAt);
    }
  }

  /**
   * A scheduled feed whose source asked to wait until `retryAt` starts no run before then (the one in progress has
   * moved `nextRunAt` already; a schedule changed since is left alone).
   */
  private async postpone(feed: FeedDoc, retryAt: Date, log: Logger): Promise<void> {
    if (!feed.schedule || !feed.nextRunAt || Date.parse(feed.nextRunAt) >= retryAt.getTime()) return;
    await this.deps.feeds
      .claimSchedule(feed.id, feed.nextRunAt, retryAt.toISOString())
      .catch((err: unknown) => log.warn({ err }, 'postponing the next scheduled run failed'));
  }

  private stillHeld(state: Running): void {
    if (this.stopping || state.leaseLost) throw new RunHandedBack();
  }

  /**
   * One page's request, within the budget, with 429/503 retried after their Retry-After while the page's waits add
   * up to at most MAX_RETRY_AFTER_MS: a longer wait ends the run (its reason says until when), it does not hold a
   * worker.
   */
  private async fetchPage(
    state: Running,
    url: string,
    following: boolean,
    /** A resource the source may not have: its 404 (or 400) is answered, not a stopped run. */
    optional = false,
  ): Promise<SourceAnswer> {
    let renewed = false;
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      const answer = await this.send(state, url, {
        headers: { prefer: `odata.maxpagesize=${state.feed.pageSize}` },
      });
      if (answer.status === 200) return answer;
      if (answer.status === 429 || answer.status === 503) {
        const now = this.deps.clock();
        const wait = retryAfterMs(answer.headers['retry-after'], now) ?? 1000 * 2 ** attempt;
        if (waited + wait > MAX_RETRY_AFTER_MS) {
          const retryAt = new Date(now.getTime() + wait);
          throw new RunStopped(throttled(answer.status, wait, retryAt, !!state.feed.schedule), true, retryAt);
        }
        if (attempt >= MAX_RETRIES)
          throw new RunStopped(
            `the source kept answering ${answer.status} (${MAX_RETRIES} retries, the last asked to wait ${Math.round(wait / 1000)} s)`,
            true,
          );
        state.job.ledger!.retries++;
        waited += wait;
        await this.sleep(wait);
        continue;
      }
      if (answer.status === 401 || answer.status === 403) {
        // A token that expired (or was revoked) mid-run: one fresh token, the same request again.
        if (answer.status === 401 && state.feed.auth.type === 'client_credentials' && !renewed) {
          renewed = true;
          state.token = undefined;
          continue;
        }
        throw new RunStopped(sourceRefusal(state.feed.auth.type, answer.status, new URL(url).pathname), true);
      }
      if (optional && !following && (answer.status === 404 || answer.status === 400)) return answer;
      // An expired or refused nextLink: start again from the position reached (a first page is not retried so).
      if (following && answer.status >= 400 && answer.status < 500) throw new WalkBroken();
      throw new RunStopped(`the source answered ${answer.status} to ${new URL(url).pathname}`, true);
    }
  }

  /** A request to the source, counted against the feed's budget (per second by spacing, per hour by the usage). */
  private async send(
    state: Running,
    url: string,
    init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  ): Promise<SourceAnswer> {
    const auth: Record<string, string> =
      init.method === 'POST' ? {} : { authorization: `Bearer ${await this.tokenOf(state)}` };
    const budget = state.feed.budget;
    if (!withinHourlyBudget(state.usage, this.deps.clock(), budget.requestsPerHour))
      throw new RunStopped(
        `the request budget of ${budget.requestsPerHour} an hour is spent; the next run goes on`,
        false,
      );
    // Spaced from the previous answer, not the previous sending: however long a request takes to arrive, the
    // source never sees two closer than 1/requestsPerSecond apart.
    const gap = 1000 / budget.requestsPerSecond - (Date.now() - state.lastRequestAt);
    if (gap > 0) await this.sleep(gap);
    state.usage = countRequest(state.usage, this.deps.clock());
    state.job.ledger!.requests++;
    try {
      return await this.deps.source.request(url, { ...init, headers: { ...init.headers, ...auth } });
    } finally {
      state.lastRequestAt = Date.now();
    }
  }

  private async tokenOf(state: Running): Promise<string> {
    const { auth } = state.feed;
    if (auth.type === 'bearer') {
      const token = this.deps.secrets.secretOf(state.feed);
      // Refused when the feed is written; a feed stored before that rule was may still hold one.
      if (!HEADER_TOKEN.test(token))
        throw new RunStopped(
          "the feed's bearer token cannot be sent in an HTTP header (not visible ASCII): replace its `auth` with PATCH /v1/feeds/{id}",
          true,
        );
      return token;
    }
    if (state.token) return state.token;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: auth.clientId,
      client_secret: this.deps.secrets.secretOf(state.feed),
      ...(auth.scope ? { scope: auth.scope } : {}),
    });
    const answer = await this.send(state, auth.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    const token = (answer.body as { access_token?: unknown } | undefined)?.access_token;
    if (answer.status !== 200 || typeof token !== 'string') throw new RunStopped(tokenRefusal(answer.status), true);
    // Sent as a header from then on: a token that cannot be would fail every request of the run.
    if (!HEADER_TOKEN.test(token)) throw new RunStopped(unsendableToken(), true);
    state.token = token;
    return token;
  }

  /**
   * Applies a page's records and records them on the run (with the position reached) in one step: one transaction
   * where the store has them; otherwise each write carries its record's mark, so a page replayed after a crash
   * recognises what it had written. Then moves the feed's cursor.
   */
  private async recordPage(state: Running, records: Record<string, unknown>[], flags: { restarted?: boolean }) {
    const job = state.job;
    const ledger: FeedLedger = structuredClone(job.ledger!);
    const errors: JobItemError[] = [...job.errors];
    let walk = job.walk;
    const photoWork: Array<{ listingId: string; key: string; photos: SourcePhoto[]; changedAt?: string }> = [];
    const apply = async () => {
      photoWork.length = 0;
      for (const [offset, record] of records.entries()) {
        const index = job.progress.processed + offset;
        ledger.fetched++;
        const key = typeof record.ListingKey === 'string' ? record.ListingKey : undefined;
        const modified = typeof record.ModificationTimestamp === 'string' ? record.ModificationTimestamp : undefined;
        if (key && modified && !Number.isNaN(Date.parse(modified))) {
          walk = { modificationTimestamp: new Date(modified).toISOString(), listingKey: key };
          ledger.cursorAfter = laterCursor(ledger.cursorAfter, walk);
        }
        const item: Record<string, unknown> = {
          ...listingFromReso(record),
          externalId: key,
          source: state.feed.originatingSystemName,
        };
        // A source without OnMarketTimestamp leaves `listedAt` to us (set when the listing first went on the market).
        if (item.listedAt === null) delete item.listedAt;
        try {
          if (!key)
            throw new AppError('validation_failed', 'The record has no ListingKey', {
              errors: [{ path: 'ListingKey', message: 'is required' }],
            });
          if (hiddenBySource(record)) {
            // Never created; a listing we have of it is quarantined, as a key missing from the key pull is.
            ledger.hidden++;
            if (await this.removals.hide(state, key, ledger.dryRun)) ledger.quarantined++;
            continue;
          }
          if (ledger.dryRun) {
            const preview = await this.deps.upserts.preview(state.ctx, item);
            if (preview.action === 'unchanged') ledger.unchanged++;
            else {
              ledger[preview.action === 'create' ? 'created' : 'updated']++;
              if ((ledger.preview ?? []).length < PREVIEW_KEPT)
                ledger.preview = [
                  ...(ledger.preview ?? []),
                  {
                    listingKey: key,
                    action: preview.action,
                    ...(preview.action === 'update'
                      ? { listingId: preview.id, fields: preview.fields }
                      : { fields: [] }),
                  },
                ];
            }
          } else {
            const done = await this.deps.upserts.upsertRecord(state.ctx, item, markOf(job, index));
            ledger[done.action]++;
            const photos = this.syncsPhotos(state) ? sourcePhotos(record) : undefined;
            if (photos) {
              const changedAt =
                typeof record.PhotosChangeTimestamp === 'string' ? record.PhotosChangeTimestamp : undefined;
              const synced = await this.deps.photos!.synced.get(done.id);
              if (synced && !synced.pending && changedAt && synced.photosChangedAt === changedAt)
                ledger.mediaUnchanged += synced.items.length;
              else {
                // Recorded with the page: a sync the process does not finish is taken up by the next run.
                await this.deps.photos!.synced.save({
                  id: done.id,
                  accountId: job.accountId,
                  feedId: state.feed.id,
                  listingKey: key,
                  ...(synced?.photosChangedAt ? { photosChangedAt: synced.photosChangedAt } : {}),
                  pending: true,
                  items: synced?.items ?? [],
                });
                photoWork.push({ listingId: done.id, key, photos, ...(changedAt ? { changedAt } : {}) });
              }
            }
          }
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err;
          ledger.failed++;
          if (errors.length < ERRORS_KEPT) errors.push(itemError(index, item, err));
        }
      }
      if (flags.restarted) ledger.restarts++;
      ledger.lagSeconds = ledger.cursorAfter
        ? Math.max(0, (this.deps.clock().getTime() - Date.parse(ledger.cursorAfter.modificationTimestamp)) / 1000)
        : null;
      const processed = job.progress.processed + records.length;
      const recorded = await this.deps.jobs.recordRun(
        job,
        this.owner,
        {
          progress: {
            total: processed,
            processed,
            succeeded: ledger.created + ledger.updated + ledger.unchanged,
            failed: ledger.failed,
          },
          errors,
          ledger,
          ...(walk ? { walk } : {}),
        },
        this.deps.clock(),
        this.leaseMs,
      );
      // Throwing rolls the page back where there is a transaction: the worker that took the run over applies it.
      if (!recorded) throw new RunHandedBack();
      return recorded;
    };
    state.job = await this.deps.commitPage(apply);
    // Downloads outside the page's transaction, while the page's MediaURLs are fresh.
    for (const work of photoWork) {
      this.stillHeld(state);
      await this.gallery!.sync(this.galleryRun(state), work.listingId, work.photos, work.changedAt);
    }
    if (photoWork.length > 0) {
      const recorded = await this.deps.jobs.recordRun(
        state.job,
        this.owner,
        {
          progress: state.job.progress,
          errors: state.job.errors,
          ledger: state.job.ledger!,
          ...(state.job.walk ? { walk: state.job.walk } : {}),
        },
        this.deps.clock(),
        this.leaseMs,
      );
      if (!recorded) throw new RunHandedBack();
      state.job = recorded;
    }
    // A dry run moves no cursor; its requests count against the budget all the same.
    const held = await this.deps.feeds.commit(state.feed.id, job.id, {
      ...(ledger.cursorAfter && !ledger.dryRun ? { cursor: ledger.cursorAfter } : {}),
      usage: state.usage,
    });
    if (!held) throw new RunStopped('the feed was deleted', true);
    this.deps.bus.notify(jobProgressSubject(job.id), progressOf(state.job), { requestId: job.requestId });
  }

  private async end(
    job: BulkJobDoc,
    outcome: { stopReason: string | null; sourceFailed: boolean },
    started: number,
    log: Logger,
    usage?: Usage,
  ): Promise<void> {
    const ledger: FeedLedger = {
      ...job.ledger!,
      durationMs: Date.now() - started,
      stopReason: outcome.stopReason,
    };
    const state = runState(
      { applied: ledger.created + ledger.updated + ledger.unchanged, failed: ledger.failed },
      outcome.sourceFailed,
    );
    // The requests of the run's last page, or of its failure, count against the budget too; and the position the
    // run recorded is the feed's even when the process that applied the last page died before moving the cursor.
    // Committed before the run reads as ended, so that a client who sees it ended finds the feed's cursor moved.
    const cursor = ledger.cursorAfter && !ledger.dryRun ? { cursor: ledger.cursorAfter } : {};
    if (job.feedId && (usage || cursor.cursor))
      await this.deps.feeds.commit(job.feedId, job.id, { ...(usage ? { usage } : {}), ...cursor }).catch(() => false);
    const finished = await this.deps.jobs.finish({ ...job, ledger }, this.owner, state, this.deps.clock());
    if (job.feedId) await this.deps.feeds.releaseRun(job.feedId, job.id);
    if (!finished) return;
    this.deps.outbox?.kick();
    this.deps.bus.notify(jobProgressSubject(job.id), progressOf(finished), { requestId: job.requestId });
    log.info({ state, ...ledger, preview: undefined }, 'feed run finished');
  }

  private sleep(ms: number): Promise<void> {
    return this.deps.sleep ? this.deps.sleep(ms) : new Promise((resolve) => setTimeout(resolve, ms));
  }
}
