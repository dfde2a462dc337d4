import { createHash } from 'node:crypto';
import type { FeedCursor, FeedRemovals } from '@estate/contracts/feeds';
import type { JobState } from '@estate/contracts/jobs';

/**
 * A later run starts this far before the committed cursor: a source may commit a record with a timestamp a little
 * behind its newest (clocks, transactions committing late). Records seen again are unchanged and not written.
 */
export const OVERLAP_MS = 5 * 60 * 1000;
/** A 429 or 503 is retried this many times in a row, waiting its Retry-After (or a growing delay) each time. */
export const MAX_RETRIES = 6;
/**
 * A Retry-After longer than this (the waits for one page added up) stops the run rather than hold its worker; the
 * next run goes on from the cursor, a scheduled one not before the time the source gave.
 */
export const MAX_RETRY_AFTER_MS = 5 * 60 * 1000;
/**
 * A page is applied in steps of this many records, each committed with the position it reached; the process serves
 * other requests between steps. A page of 1,000 records as one transaction held the listings store, and the event
 * loop, for seconds.
 */
export const PAGE_STEP = 25;
/** Record errors kept on the job (the ledger counts them all). */
export const ERRORS_KEPT = 1000;
/** Records a dry run lists in its preview. */
export const PREVIEW_KEPT = 100;

/** Removals of a feed stored before they could be set. */
export const DEFAULT_REMOVALS: FeedRemovals = { quarantineRuns: 3, maxRemovedPercent: 5 };

const quoted = (text: string): string => `'${text.replace(/'/g, "''")}'`;
/** A resource's URL under the service root with these query options (spaces as `%20`, as OData servers expect). */
const resourceUrl = (serviceRoot: string, resource: string, params: URLSearchParams): string =>
  `${serviceRoot.replace(/\/+$/, '')}/${resource}?${params.toString().replace(/\+/g, '%20')}`;
/** An OData DateTimeOffset literal (unquoted), in UTC with milliseconds. */
const timestamp = (iso: string): string => new Date(iso).toISOString();

/** Where a walk starts: from the beginning, strictly after a position, or from a time (a later run's overlap). */
export type WalkStart = { kind: 'beginning' } | { kind: 'after'; cursor: FeedCursor } | { kind: 'since'; at: string };

/** Where a run starts: after the position a run in progress recorded, else the overlap before the committed cursor. */
export function walkStart(walk: FeedCursor | undefined, committed: FeedCursor | null): WalkStart {
  if (walk) return { kind: 'after', cursor: walk };
  if (!committed) return { kind: 'beginning' };
  return { kind: 'since', at: new Date(Date.parse(committed.modificationTimestamp) - OVERLAP_MS).toISOString() };
}

/** The first page's URL of a walk in `ModificationTimestamp,ListingKey` order (later pages follow nextLinks). */
export function pageUrl(
  serviceRoot: string,
  resource: string,
  start: WalkStart,
  extraFilter?: string,
  expandMedia = false,
): string {
  const filters: string[] = [];
  if (start.kind === 'after') {
    const t = timestamp(start.cursor.modificationTimestamp);
    filters.push(
      `(ModificationTimestamp gt ${t} or (ModificationTimestamp eq ${t} and ListingKey gt ${quoted(start.cursor.listingKey)}))`,
    );
  } else if (start.kind === 'since') filters.push(`ModificationTimestamp ge ${timestamp(start.at)}`);
  if (extraFilter) filters.push(`(${extraFilter})`);
  const params = new URLSearchParams({ $orderby: 'ModificationTimestamp,ListingKey' });
  if (filters.length > 0) params.set('$filter', filters.join(' and '));
  if (expandMedia) params.set('$expand', 'Media');
  return resourceUrl(serviceRoot, resource, params);
}

/** The first page of a complete key pull: every key the feed selects, nothing else asked for. */
export function keysUrl(serviceRoot: string, resource: string, extraFilter?: string): string {
  const params = new URLSearchParams({ $select: 'ListingKey', $orderby: 'ModificationTimestamp,ListingKey' });
  if (extraFilter) params.set('$filter', `(${extraFilter})`);
  return resourceUrl(serviceRoot, resource, params);
}

/**
 * The keys of a complete key pull, 8 bytes each (the first 64 bits of each key's SHA-256) rather than the strings: a
 * portal's million keys take 8 MB, not a hundred. Two keys with the same 64 bits (about one chance in 36 million at a
 * million keys) read as one, so a listing gone from the feed could be taken as present: the safe side, as nothing is
 * quarantined on it.
 */
export class PulledKeys {
  private hashes = new BigUint64Array(1024);
  private count = 0;
  private sealed = true;

  add(key: string): void {
    if (this.count === this.hashes.length) {
      const grown = new BigUint64Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.count++] = PulledKeys.hash(key);
    this.sealed = false;
  }

  /** Distinct keys. */
  get size(): number {
    this.seal();
    return this.count;
  }

  has(key: string): boolean {
    this.seal();
    const wanted = PulledKeys.hash(key);
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.hashes[mid];
      if (at === wanted) return true;
      if (at < wanted) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /** Sorted, without repeats (a key seen on two pages counts once). */
  private seal(): void {
    if (this.sealed) return;
    const held = this.hashes.subarray(0, this.count).sort();
    let distinct = 0;
    for (let i = 0; i < held.length; i++) if (i === 0 || held[i] !== held[distinct - 1]) held[distinct++] = held[i];
    this.count = distinct;
    this.sealed = true;
  }

  private static hash(key: string): bigint {
    return createHash('sha256').update(key).digest().readBigUInt64BE(0);
  }
}

/** Records one run takes from EntityEvent at most (distinct keys); the rest wait for the next run. */
export const EVENTS_PER_RUN = 10_000;
/** Keys asked about in one presence check (`ListingKey in (...)`): a URL of a few kilobytes. */
export const KEYS_PER_CHECK = 50;
/** A source that answered that it has no EntityEvent is asked again this long after. */
export const EVENTS_PROBE_INTERVAL_MS = 24 * 60 * 60 * 1000;

/**
 * The source's EntityEvent (RESO RCP-027), the log of which records changed, deletions included: the newest event
 * alone (`after` undefined: where a feed starts following it), or the events after `after`, oldest first.
 */
export function entityEventsUrl(serviceRoot: string, after: number | undefined): string {
  const params =
    after === undefined
      ? new URLSearchParams({ $orderby: 'EntityEventSequence desc', $top: '1', $select: 'EntityEventSequence' })
      : new URLSearchParams({
          $filter: `EntityEventSequence gt ${after}`,
          $orderby: 'EntityEventSequence',
          $select: 'EntityEventSequence,ResourceName,ResourceRecordKey',
        });
  return resourceUrl(serviceRoot, 'EntityEvent', params);
}

/** Which of these keys the feed still selects: `ListingKey in (...)` joined with the feed's filter, keys only. */
export function presentKeysUrl(serviceRoot: string, resource: string, keys: readonly string[], extraFilter?: string) {
  const byKey = `ListingKey in (${keys.map(quoted).join(',')})`;
  const params = new URLSearchParams({
    $filter: extraFilter ? `${byKey} and (${extraFilter})` : byKey,
    $select: 'ListingKey',
    $top: String(keys.length),
  });
  return resourceUrl(serviceRoot, resource, params);
}

/** What a complete key pull found about one listing of the feed. */
export type Missing = { runs: number; runId: string } | undefined;

/**
 * The circuit breaker: whether taking out `missing` of the feed's `total` listings stays within the share allowed.
 * A feed that suddenly answers no keys at all has every listing missing: it trips (unless the share allowed is 100%).
 */
export function withinRemovalShare(missing: number, total: number, removals: FeedRemovals): boolean {
  if (missing === 0) return true;
  return (missing / total) * 100 <= removals.maxRemovedPercent;
}

/**
 * Whether the source flags the record as not for display: MLS Grid's `MlgCanView` false (its consumers must take
 * such a listing down). A removal signal like a key missing from the key pull (SPEC §14).
 */
export function hiddenBySource(record: Record<string, unknown>): boolean {
  return record.MlgCanView === false;
}

/**
 * What a reconciliation does to a listing its feed no longer has: quarantined the first time; counted again by
 * each later reconciliation (not twice by one run resumed); deleted by the `quarantineRuns`-th in a row, never by
 * the one that first finds it missing.
 */
export function missingAction(
  current: Missing,
  runId: string,
  removals: FeedRemovals,
): { action: 'quarantine' } | { action: 'count'; runs: number } | { action: 'remove' } | { action: 'none' } {
  if (!current) return { action: 'quarantine' };
  if (current.runId === runId) return { action: 'none' };
  const runs = current.runs + 1;
  return runs >= removals.quarantineRuns ? { action: 'remove' } : { action: 'count', runs };
}

/** One record again, with its media (fresh MediaURLs): `$filter=ListingKey eq 'k'&$expand=Media`. */
export function recordUrl(serviceRoot: string, resource: string, listingKey: string): string {
  const params = new URLSearchParams({ $filter: `ListingKey eq ${quoted(listingKey)}`, $expand: 'Media' });
  return resourceUrl(serviceRoot, resource, params);
}

/** A source Media record as the sync reads it. */
export interface SourcePhoto {
  key: string;
  url: string;
  order: number;
  preferred: boolean;
  caption?: string;
  modified?: string;
}

/**
 * The photos of a record's expanded `Media`, in display order (`PreferredPhotoYN` first, then `Order`); tours and
 * other categories, and entries without a key or URL, left out. Undefined when the record carries no `Media`.
 */
export function sourcePhotos(record: Record<string, unknown>): SourcePhoto[] | undefined {
  if (!Array.isArray(record.Media)) return undefined;
  const photos: SourcePhoto[] = [];
  for (const [i, m] of (record.Media as Array<Record<string, unknown>>).entries()) {
    if (!m || typeof m.MediaKey !== 'string' || typeof m.MediaURL !== 'string') continue;
    if (m.MediaCategory !== undefined && m.MediaCategory !== null && m.MediaCategory !== 'Photo') continue;
    photos.push({
      key: m.MediaKey,
      url: m.MediaURL,
      order: typeof m.Order === 'number' ? m.Order : i,
      preferred: m.PreferredPhotoYN === true,
      ...(typeof m.ShortDescription === 'string' && m.ShortDescription ? { caption: m.ShortDescription } : {}),
      ...(typeof m.MediaModificationTimestamp === 'string' ? { modified: m.MediaModificationTimestamp } : {}),
    });
  }
  return photos.sort((a, b) => Number(b.preferred) - Number(a.preferred) || a.order - b.order);
}

/** `(ModificationTimestamp, ListingKey)` order. */
export function compareCursors(a: FeedCursor, b: FeedCursor): number {
  const t = Date.parse(a.modificationTimestamp) - Date.parse(b.modificationTimestamp);
  if (t !== 0) return t;
  return a.listingKey < b.listingKey ? -1 : a.listingKey > b.listingKey ? 1 : 0;
}

export const laterCursor = (a: FeedCursor | null, b: FeedCursor | null): FeedCursor | null =>
  !a ? b : !b ? a : compareCursors(a, b) >= 0 ? a : b;

/** How long a Retry-After asks to wait (seconds or an HTTP date); undefined when it says nothing usable. */
export function retryAfterMs(header: string | string[] | undefined, now: Date): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** Requests per epoch minute of the last hour. */
export type Usage = Array<{ minute: number; count: number }>;

/** The usage with one more request at `now`, older than an hour dropped. */
export function countRequest(usage: Usage, now: Date): Usage {
  const minute = Math.floor(now.getTime() / 60_000);
  const kept = usage.filter((u) => u.minute > minute - 60);
  const current = kept.find((u) => u.minute === minute);
  return current
    ? kept.map((u) => (u === current ? { minute, count: u.count + 1 } : u))
    : [...kept, { minute, count: 1 }];
}

/** Whether another request stays within `perHour` (whole minutes of the last hour counted: never more). */
export function withinHourlyBudget(usage: Usage, now: Date, perHour: number | undefined): boolean {
  if (perHour === undefined) return true;
  const minute = Math.floor(now.getTime() / 60_000);
  const used = usage.filter((u) => u.minute > minute - 60).reduce((sum, u) => sum + u.count, 0);
  return used < perHour;
}

const GOES_ON = 'the cursor stays at the last page written and the next run goes on from there';

/**
 * Why a run stopped when the source refused its credentials (401, for client credentials after one fresh token) or
 * its access (403): what to renew, not only a status.
 */
export function sourceRefusal(auth: 'bearer' | 'client_credentials', status: number, path: string): string {
  if (status === 403)
    return `the source refused access (403 at ${path}): the feed's credentials may not read this resource; ${GOES_ON}`;
  return auth === 'bearer'
    ? `the source refused the feed's bearer token (401 at ${path}): replace its \`auth\` with PATCH /v1/feeds/{id}; ${GOES_ON}`
    : `the source refused a fresh token of the feed's client credentials (401 at ${path}): check the client's access at the source; ${GOES_ON}`;
}

/** Why a run stopped when the source asked to wait longer than a run waits (a 429 or 503 with a long Retry-After). */
export function throttled(status: number, waitMs: number, retryAt: Date, scheduled: boolean): string {
  return (
    `the source answered ${status} and asked to wait ${Math.round(waitMs / 1000)} s, until ${retryAt.toISOString()}: ` +
    `the run stopped rather than wait that long; ${GOES_ON}` +
    (scheduled ? ', and the schedule starts none before then' : ' (start it after then)')
  );
}

/** A page's records and nextLink, or why the answer is not a page (nothing of it is written). */
export function readPage(
  answer: { body: unknown; notJson?: string; headers: Record<string, string | string[] | undefined> },
  path: string,
): { value: unknown[]; nextLink: unknown } | { problem: string } {
  const type = String(answer.headers['content-type'] ?? 'no content-type').split(';')[0];
  const body = answer.body;
  let what: string | undefined;
  if (answer.notJson !== undefined)
    what = answer.notJson ? `a body that is not JSON (${type}: "${answer.notJson}")` : `an empty body (${type})`;
  else if (!body || typeof body !== 'object' || Array.isArray(body)) what = 'JSON that is not an object';
  else if (!Array.isArray((body as { value?: unknown }).value)) {
    const fields = Object.keys(body).slice(0, 5);
    what = `JSON without a \`value\` list (${fields.length ? `fields: ${fields.join(', ')}` : 'an empty object'})`;
  }
  if (what)
    return { problem: `the source answered 200 to ${path} with ${what}: nothing of that page was written; ${GOES_ON}` };
  const page = body as { value: unknown[]; '@odata.nextLink'?: unknown };
  return { value: page.value, nextLink: page['@odata.nextLink'] };
}

/** Why a run stopped when the token endpoint gave a token that cannot be sent. */
export function unsendableToken(): string {
  return `the token endpoint answered an access token that cannot be sent in an HTTP header (not visible ASCII); ${GOES_ON}`;
}

/** Why a run stopped when the token endpoint gave no token. */
export function tokenRefusal(status: number): string {
  return status === 400 || status === 401
    ? `the token endpoint refused the feed's client credentials (${status}): replace the feed's \`auth\` with PATCH /v1/feeds/{id}; ${GOES_ON}`
    : `the token endpoint answered ${status} without an access token; ${GOES_ON}`;
}

/** How a run ends: a source failure fails it (partly, when something was applied); record errors fail it partly. */
export function runState(counts: { applied: number; failed: number }, sourceFailed: boolean): JobState {
  if (sourceFailed) return counts.applied > 0 ? 'partially_failed' : 'failed';
  if (counts.failed === 0) return 'succeeded';
  return counts.applied === 0 ? 'failed' : 'partially_failed';
}
