import type { Listing } from '@estate/contracts/listings';
import { AppError } from '@estate/platform/errors';
import type { SourceAnswer } from '../clients/feed-source.client';
import { SourceUnreachable } from '../clients/feed-source.client';
import {
  DEFAULT_REMOVALS,
  entityEventsUrl,
  EVENTS_PER_RUN,
  EVENTS_PROBE_INTERVAL_MS,
  KEYS_PER_CHECK,
  keysUrl,
  missingAction,
  presentKeysUrl,
  PulledKeys,
  readPage,
  withinRemovalShare,
} from '../feed-sync.rules';
import type { FeedDoc } from '../repositories/feed.repository';
import type { FeedRunWorkerDeps } from './feed-run.worker';
import { firstMark, RunHandedBack, RunStopped, WalkBroken, type Running } from './feed-run.state';

/** The run's conversation with its source, as the run worker holds it (budget, retries, token, lease). */
export interface RunSource {
  fetchPage(state: Running, url: string, following: boolean, optional?: boolean): Promise<SourceAnswer>;
  /** Throws when the run is no longer this worker's (lease lost, or stopping). */
  stillHeld(state: Running): void;
}

/**
 * How a feed run finds the listings the source no longer has (decision 0112): the complete key pull of a
 * reconciliation, the source's EntityEvent after each walk, and records the source flags as not for display. What
 * they find is quarantined (a mark on the listing), and deleted only by key pulls, under the circuit breaker.
 */
export class FeedRemovals {
  constructor(
    private readonly deps: Pick<FeedRunWorkerDeps, 'feeds' | 'listings' | 'upserts' | 'feedListings' | 'clock'>,
    private readonly source: RunSource,
  ) {}

  /**
   * The complete key pull and what follows from it: every key the feed selects, then each of the account's
   * listings of this source that the pull did not return is quarantined, counted again or deleted
   * (`missingAction`), and each quarantined one it did return is shown again. Nothing is quarantined or deleted
   * unless the pull reached the end of the feed (a failed page, a spent budget, an expired nextLink all stop it), nor
   * when more than `maxRemovedPercent` of the feed's listings are missing.
   */
  async reconcile(state: Running): Promise<void> {
    const { feed } = state;
    const ledger = state.job.ledger!;
    const removals = feed.removals ?? DEFAULT_REMOVALS;
    const keys = new PulledKeys();
    let url = keysUrl(feed.serviceRoot, feed.resource, feed.filter);
    let following = false;
    try {
      for (;;) {
        this.source.stillHeld(state);
        const answer = await this.source.fetchPage(state, url, following);
        const page = readPage(answer, new URL(url).pathname);
        if ('problem' in page) throw new RunStopped(page.problem, true);
        for (const r of page.value as Array<{ ListingKey?: unknown }>)
          if (r && typeof r.ListingKey === 'string') keys.add(r.ListingKey);
        const next = page.nextLink;
        if (typeof next !== 'string' || page.value.length === 0) break;
        url = new URL(next, url).toString();
        following = true;
      }
    } catch (err) {
      if (err instanceof RunHandedBack) throw err;
      const why =
        err instanceof WalkBroken
          ? 'a nextLink expired'
          : err instanceof RunStopped
            ? err.reason
            : err instanceof SourceUnreachable
              ? err.message
              : 'it failed (see the logs)';
      if (!(err instanceof WalkBroken || err instanceof RunStopped || err instanceof SourceUnreachable)) throw err;
      throw new RunStopped(
        `the key pull did not reach the end of the feed (${why}): nothing was quarantined or removed`,
        !(err instanceof RunStopped) || err.sourceFailed,
      );
    }
    ledger.keys = keys.size;

    // Which of the feed's listings the pull did not return, which the source flagged as not for display (their keys
    // stay in the pull), and which quarantined ones are back. Only the missing ones count towards the breaker.
    let total = 0;
    const missing: string[] = [];
    const flagged: string[] = [];
    const back: string[] = [];
    for await (const batch of this.deps.feedListings.ofSource(state.ctx.who.accountId, feed.originatingSystemName)) {
      for (const listing of batch) {
        total++;
        if (!listing.externalId || !keys.has(listing.externalId)) missing.push(listing.id);
        else if (listing.sourceMissing?.reason === 'hidden') flagged.push(listing.id);
        else if (listing.sourceMissing) back.push(listing.id);
      }
    }
    const tripped = !withinRemovalShare(missing.length, total, removals);
    const now = this.deps.clock().toISOString();
    for (const id of back) {
      this.source.stillHeld(state);
      if (ledger.dryRun) ledger.restored++;
      else if (await this.mark(state, id, () => null)) ledger.restored++;
    }
    if (!tripped)
      for (const id of [...missing, ...flagged]) {
        this.source.stillHeld(state);
        const listing = await this.deps.listings.get(state.ctx.who, id).catch(() => null);
        if (!listing) continue;
        const step = missingAction(listing.sourceMissing ?? undefined, state.job.id, removals);
        if (step.action === 'none') continue;
        if (ledger.dryRun) {
          if (step.action === 'remove') ledger.removed++;
          else if (step.action === 'quarantine') ledger.quarantined++;
          continue;
        }
        if (step.action === 'remove') {
          const gone = await this.deps.listings.remove(state.ctx, id).then(
            () => true,
            (err: unknown) => {
              if (err instanceof AppError && err.status < 500) return false;
              throw err;
            },
          );
          if (gone) ledger.removed++;
          continue;
        }
        const mark = await this.mark(state, id, (current) =>
          step.action === 'quarantine'
            ? firstMark(state, now, 'missing')
            : { ...current.sourceMissing!, runs: step.runs, runId: state.job.id },
        );
        if (mark && step.action === 'quarantine') ledger.quarantined++;
      }
    if (!ledger.dryRun) await this.deps.feeds.commit(feed.id, state.job.id, { reconciledAt: now, usage: state.usage });
    if (tripped)
      throw new RunStopped(
        `the key pull found ${missing.length} of the feed's ${total} listings missing (${((missing.length / total) * 100).toFixed(1)}%), ` +
          `more than removals.maxRemovedPercent (${removals.maxRemovedPercent}%): nothing was quarantined or removed`,
        true,
      );
  }

  /** What a run does with the source's EntityEvent: find where to start following it, follow it, or nothing. */
  private eventsStep(state: Running): 'start' | 'follow' | 'none' {
    if (state.job.ledger!.dryRun) return 'none';
    const events = state.feed.entityEvents;
    if (!events) return 'start';
    if ('sequence' in events) return 'follow';
    return Date.parse(events.absentAt) + EVENTS_PROBE_INTERVAL_MS <= this.deps.clock().getTime() ? 'start' : 'none';
  }

  private async commitEvents(state: Running, events: NonNullable<FeedDoc['entityEvents']>): Promise<void> {
    if (!(await this.deps.feeds.commit(state.feed.id, state.job.id, { entityEvents: events, usage: state.usage })))
      throw new RunStopped('the feed was deleted', true);
    state.feed = { ...state.feed, entityEvents: events };
  }

  /**
   * Before a feed's first walk: the source's newest EntityEvent, where following it starts (what happened before is
   * in the walk). A source without EntityEvent is remembered as such, and asked again a day later.
   */
  async startFollowingEvents(state: Running): Promise<void> {
    if (this.eventsStep(state) !== 'start') return;
    const url = entityEventsUrl(state.feed.serviceRoot, undefined);
    const answer = await this.source.fetchPage(state, url, false, true);
    if (answer.status !== 200) {
      await this.commitEvents(state, { absentAt: this.deps.clock().toISOString() });
      return;
    }
    const page = readPage(answer, new URL(url).pathname);
    if ('problem' in page) throw new RunStopped(page.problem, true);
    const newest = (page.value[0] as { EntityEventSequence?: unknown } | undefined)?.EntityEventSequence;
    await this.commitEvents(state, { sequence: typeof newest === 'number' ? newest : 0 });
  }

  /**
   * After the walk: the source's EntityEvent records since the last one taken into account (RESO RCP-027). A record
   * they name that the source no longer has (or that the feed's filter no longer selects), of a listing we have, is
   * deleted at the source: the listing is quarantined as one missing from a key pull is, and deleted by later key
   * pulls under the circuit breaker. Records that changed were taken by the walk.
   */
  async followEvents(state: Running): Promise<void> {
    if (this.eventsStep(state) !== 'follow') return;
    const { feed } = state;
    const ledger = state.job.ledger!;
    // The events of the run before are read again: a record deleted just before it may still have been found by its
    // presence check where the source's reads lag its event log.
    const followed = feed.entityEvents as { sequence: number; previous?: number };
    let after = followed.previous ?? followed.sequence;
    const keys = new Set<string>();
    let read = 0;
    let url = entityEventsUrl(feed.serviceRoot, after);
    let following = false;
    while (keys.size < EVENTS_PER_RUN) {
      this.source.stillHeld(state);
      let answer: SourceAnswer;
      try {
        answer = await this.source.fetchPage(state, url, following, true);
      } catch (err) {
        if (!(err instanceof WalkBroken)) throw err;
        // An expired nextLink: ask again after the last event read.
        ledger.restarts++;
        url = entityEventsUrl(feed.serviceRoot, after);
        following = false;
        continue;
      }
      if (answer.status !== 200) {
        // The source no longer has EntityEvent: ask again a day later.
        await this.commitEvents(state, { absentAt: this.deps.clock().toISOString() });
        return;
      }
      const page = readPage(answer, new URL(url).pathname);
      if ('problem' in page) throw new RunStopped(page.problem, true);
      for (const event of page.value as Array<Record<string, unknown>>) {
        const sequence = event?.EntityEventSequence;
        if (typeof sequence !== 'number' || sequence <= after) continue;
        if (sequence > followed.sequence) read++;
        after = sequence;
        if (event.ResourceName === feed.resource && typeof event.ResourceRecordKey === 'string')
          keys.add(event.ResourceRecordKey);
      }
      const next = page.nextLink;
      if (typeof next !== 'string' || page.value.length === 0) break;
      url = new URL(next, url).toString();
      following = true;
    }
    ledger.entityEvents = read;

    // Of the listings we have of those keys (and show), the ones the source no longer selects.
    const shown: Array<{ key: string; id: string }> = [];
    for (const key of keys) {
      const listing = await this.deps.upserts.findRecord(state.ctx, key, feed.originatingSystemName);
      if (listing && !listing.sourceMissing) shown.push({ key, id: listing.id });
    }
    const per = Math.min(KEYS_PER_CHECK, feed.pageSize);
    const gone: string[] = [];
    for (let from = 0; from < shown.length; from += per) {
      const batch = shown.slice(from, from + per);
      const present = new Set<string>();
      let check = presentKeysUrl(
        feed.serviceRoot,
        feed.resource,
        batch.map((b) => b.key),
        feed.filter,
      );
      for (let more = true; more;) {
        this.source.stillHeld(state);
        const page = readPage(await this.source.fetchPage(state, check, false), new URL(check).pathname);
        if ('problem' in page) throw new RunStopped(page.problem, true);
        for (const r of page.value as Array<{ ListingKey?: unknown }>)
          if (r && typeof r.ListingKey === 'string') present.add(r.ListingKey);
        more = typeof page.nextLink === 'string' && page.value.length > 0;
        if (more) check = new URL(page.nextLink as string, check).toString();
      }
      for (const b of batch) if (!present.has(b.key)) gone.push(b.id);
    }
    const since = this.deps.clock().toISOString();
    for (const id of gone) {
      this.source.stillHeld(state);
      const quarantined = await this.mark(
        state,
        id,
        (current) => current.sourceMissing ?? firstMark(state, since, 'missing'),
      );
      if (quarantined) ledger.quarantined++;
    }
    await this.commitEvents(state, { sequence: Math.max(after, followed.sequence), previous: followed.sequence });
  }

  /** Quarantines the listing of a record the source flags as not for display; whether it was (or would be). */
  async hide(state: Running, key: string, dryRun: boolean): Promise<boolean> {
    const listing = await this.deps.upserts.findRecord(state.ctx, key, state.feed.originatingSystemName);
    if (!listing || listing.sourceMissing) return false;
    if (dryRun) return true;
    const since = this.deps.clock().toISOString();
    return this.mark(state, listing.id, (current) => current.sourceMissing ?? firstMark(state, since, 'hidden'));
  }

  /** Sets or clears a listing's quarantine mark, re-read at each attempt; whether it was written. */
  private async mark(
    state: Running,
    id: string,
    next: (current: Listing) => NonNullable<Listing['sourceMissing']> | null,
  ): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.deps.listings.get(state.ctx.who, id).catch(() => null);
      if (!current) return false;
      if (await this.deps.listings.writeSourceMissing(state.ctx, current, next(current))) return true;
    }
    return false;
  }
}
