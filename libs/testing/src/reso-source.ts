import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A RESO Property record as a source serves it (ListingKey and ModificationTimestamp at least). */
export type SourceRecord = Record<string, unknown> & { ListingKey: string; ModificationTimestamp: string };

/** Misbehaviours a test turns on: each is a failure mode real feeds show. */
export interface SourceFaults {
  /** nextLinks answered 400 once used this many times in all (they "expire"). */
  nextLinksValidFor?: number;
  /** The next N requests answer 429 with `Retry-After: 0`. */
  tooManyRequests?: number;
  /** The next N requests answer 503 with `Retry-After: 0`. */
  unavailable?: number;
  /** Every page answers no records. */
  empty?: boolean;
  /**
   * A complete key pull (`$select=ListingKey`) breaks: `page` answers 500 to its second page, `nextLink` answers its
   * nextLinks 400 (expired).
   */
  keyPull?: 'page' | 'nextLink';
  /** Photo paths (under `/photos/`) answered 403, as an expired signed URL is. */
  expiredPhotos?: Set<string>;
  /** The Retry-After the 429s and 503s above carry (seconds or an HTTP date; `0` unless told). */
  retryAfter?: string;
  /** A token issued by `/token` answers 401 once it has been used this many times (it "expires" mid-run). */
  tokenUses?: number;
  /** The client's credentials are revoked: `/token` answers 401 and every token (`source-token` too) answers 401. */
  revoked?: boolean;
  /** `/token` issues tokens that cannot travel in an HTTP header (a line break and a non-ASCII letter in them). */
  unsendableToken?: boolean;
  /** The faults above (429s, 503s, revocation) start only once this many Property pages have been served. */
  afterPages?: number;
  /**
   * The Property page request with this number (from 1, counted in `pages`) answers 200 with `body` as it is: an
   * HTML error page, a cut-off answer, JSON without `value`.
   */
  brokenPage?: { at: number; body: string; contentType: string };
  /**
   * Records the source commits once this many Property pages have been served (a change during a run): put into
   * `records` before the next page is answered, whatever their ModificationTimestamp.
   */
  commitsAfter?: { pages: number; records: SourceRecord[] };
  /** Property pages are answered only once this settles (a test gets ready before a run goes on). */
  held?: Promise<unknown>;
}

/**
 * A RESO Web API source for feed tests: serves `Property` in `ModificationTimestamp,ListingKey` order with keyset
 * nextLinks, and understands the replication filters a feed sends (`ModificationTimestamp ge t`, the keyset
 * `(ModificationTimestamp gt t or (ModificationTimestamp eq t and ListingKey gt 'k'))`). Records are changed and
 * removed between requests by the test; `faults` misbehave on demand.
 */
export class ResoTestSource {
  records = new Map<string, SourceRecord>();
  faults: SourceFaults = {};
  /** Every request's path and query, in order. */
  readonly requests: string[] = [];
  /** When each request arrived (ms since the epoch), in order. */
  readonly times: number[] = [];
  /** Photos served without credentials at `${photoBase}/<name>` (a record's `Media[].MediaURL` points here). */
  readonly photos = new Map<string, Buffer>();
  /** Photo downloads, by name, in order. */
  readonly downloads: string[] = [];
  photoBase = '';
  /** The OAuth token endpoint (client credentials `source-client` / `source-secret`). */
  tokenUrl = '';
  /** Tokens `/token` issued, in order. */
  readonly tokens: string[] = [];
  /** Property pages answered (the key pull's and single records' included). */
  pages = 0;
  /**
   * Serve EntityEvent (RESO RCP-027): each `put` and `remove` is an event of its record. Off (the default), EntityEvent
   * answers 404, as it does on most sources.
   */
  entityEvents = false;
  /** The EntityEvent log, oldest first. */
  readonly events: Array<{ EntityEventSequence: number; ResourceName: string; ResourceRecordKey: string }> = [];
  private readonly tokenUsed = new Map<string, number>();
  private nextLinksUsed = 0;
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    const answer = (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://source.invalid');
      this.requests.push(`${url.pathname}${url.search}`);
      this.times.push(Date.now());
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (url.pathname.startsWith('/photos/')) {
        const name = url.pathname.slice('/photos/'.length);
        this.downloads.push(name);
        const bytes = this.photos.get(name);
        if (this.faults.expiredPhotos?.has(name) || !bytes) {
          res.writeHead(bytes ? 403 : 404);
          return res.end();
        }
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        return res.end(bytes);
      }
      if (url.pathname === '/token') return this.token(req, send);
      if (!this.authorized(req.headers.authorization)) return send(401, { error: { code: '401', message: 'no' } });
      const retryAfter = { 'retry-after': this.faults.retryAfter ?? '0' };
      const faulty = this.pages >= (this.faults.afterPages ?? 0);
      if (faulty && this.faults.tooManyRequests) {
        this.faults.tooManyRequests--;
        return send(429, { error: { code: '429', message: 'slow down' } }, retryAfter);
      }
      if (faulty && this.faults.unavailable) {
        this.faults.unavailable--;
        return send(503, { error: { code: '503', message: 'away' } }, retryAfter);
      }
      if (url.pathname.endsWith('/EntityEvent') && this.entityEvents) return this.eventPage(url, req, send);
      if (!url.pathname.endsWith('/Property')) return send(404, { error: { code: '404', message: 'no resource' } });
      this.pages++;
      const commits = this.faults.commitsAfter;
      if (commits && this.pages > commits.pages) {
        this.put(...commits.records);
        delete this.faults.commitsAfter;
      }
      const broken = this.faults.brokenPage;
      if (broken && broken.at === this.pages) {
        res.writeHead(200, { 'content-type': broken.contentType });
        return res.end(broken.body);
      }
      const token = url.searchParams.get('$skiptoken');
      const select = url.searchParams.get('$select');
      if (select !== null && token !== null && this.faults.keyPull === 'page')
        return send(500, { error: { code: '500', message: 'the key pull broke' } });
      if (select !== null && token !== null && this.faults.keyPull === 'nextLink')
        return send(400, { error: { code: '400', message: 'the nextLink expired' } });
      if (token !== null) {
        this.nextLinksUsed++;
        if (this.faults.nextLinksValidFor !== undefined && this.nextLinksUsed > this.faults.nextLinksValidFor)
          return send(400, { error: { code: '400', message: 'the nextLink expired' } });
      }
      const size = Number(/odata\.maxpagesize=(\d+)/.exec(String(req.headers.prefer ?? ''))?.[1] ?? 100);
      const after = token ? (JSON.parse(Buffer.from(token, 'base64url').toString()) as [string, string]) : undefined;
      const rows = this.faults.empty ? [] : this.select(url.searchParams.get('$filter') ?? '', after);
      const fields = select?.split(',').map((f) => f.trim());
      const expand = url.searchParams.get('$expand') === 'Media';
      const page = rows
        .slice(0, size)
        .map((r) => (fields ? (Object.fromEntries(fields.map((f) => [f, r[f]])) as SourceRecord) : r))
        .map((r) => {
          if (expand) return { ...r, Media: r.Media ?? [] };
          const { Media: _media, ...rest } = r;
          return rest;
        });
      const last = rows.slice(0, size)[page.length - 1];
      const next = new URL(url.toString());
      if (last)
        next.searchParams.set(
          '$skiptoken',
          Buffer.from(JSON.stringify([last.ModificationTimestamp, last.ListingKey])).toString('base64url'),
        );
      send(200, {
        '@odata.context': `${this.url}/$metadata#Property`,
        value: page,
        ...(rows.length > size ? { '@odata.nextLink': `${this.url}/Property${next.search}` } : {}),
      });
    };
    this.server = createServer((req, res) => {
      const held = this.faults.held;
      if (held && new URL(req.url ?? '/', 'http://source.invalid').pathname.endsWith('/Property'))
        void held.then(() => answer(req, res));
      else answer(req, res);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/odata`;
    this.photoBase = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/photos`;
    this.tokenUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/token`;
    return this;
  }

  private revoked(): boolean {
    return !!this.faults.revoked && this.pages >= (this.faults.afterPages ?? 0);
  }

  /** While the credentials stand: `source-token`, and a token `/token` issued that has uses left. */
  private authorized(header: string | undefined): boolean {
    const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
    if (this.revoked()) return false;
    if (token === 'source-token') return true;
    if (!token || !this.tokens.includes(token)) return false;
    const used = (this.tokenUsed.get(token) ?? 0) + 1;
    this.tokenUsed.set(token, used);
    return this.faults.tokenUses === undefined || used <= this.faults.tokenUses;
  }

  /** The client-credentials grant: a new token each time, unless the credentials are revoked. */
  private token(req: IncomingMessage, send: (status: number, body: unknown) => void): void {
    let form = '';
    req.on('data', (chunk: Buffer) => (form += chunk.toString()));
    req.on('end', () => {
      const params = new URLSearchParams(form);
      if (
        this.revoked() ||
        params.get('grant_type') !== 'client_credentials' ||
        params.get('client_id') !== 'source-client' ||
        params.get('client_secret') !== 'source-secret'
      )
        return send(401, { error: 'invalid_client' });
      const token = `issued-${this.tokens.length + 1}${this.faults.unsendableToken ? '\nå' : ''}`;
      this.tokens.push(token);
      send(200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
    });
  }

  put(...records: SourceRecord[]): void {
    for (const r of records) {
      this.records.set(r.ListingKey, r);
      this.event(r.ListingKey);
    }
  }

  /** Deletes records at the source (an EntityEvent each, as a deletion is). */
  remove(...keys: string[]): void {
    for (const key of keys) {
      this.records.delete(key);
      this.event(key);
    }
  }

  private event(key: string): void {
    this.events.push({ EntityEventSequence: this.events.length + 1, ResourceName: 'Property', ResourceRecordKey: key });
  }

  /** `$filter=EntityEventSequence gt N` oldest first, or `$orderby=EntityEventSequence desc` newest first; `$top`. */
  private eventPage(url: URL, req: IncomingMessage, send: (status: number, body: unknown) => void): void {
    const gt = Number(/EntityEventSequence gt (\d+)/.exec(url.searchParams.get('$filter') ?? '')?.[1] ?? 0);
    const desc = /desc/.test(url.searchParams.get('$orderby') ?? '');
    const from = Number(url.searchParams.get('$skip') ?? 0);
    const top = Number(url.searchParams.get('$top') ?? Infinity);
    const size = Math.min(top, Number(/odata\.maxpagesize=(\d+)/.exec(String(req.headers.prefer ?? ''))?.[1] ?? 100));
    const all = this.events.filter((e) => e.EntityEventSequence > gt);
    const ordered = desc ? [...all].reverse() : all;
    const wanted = ordered.slice(0, top);
    const next = new URL(url.toString());
    next.searchParams.set('$skip', String(from + size));
    send(200, {
      '@odata.context': `${this.url}/$metadata#EntityEvent`,
      value: wanted.slice(from, from + size),
      ...(wanted.length > from + size ? { '@odata.nextLink': `${this.url}/EntityEvent${next.search}` } : {}),
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private select(filter: string, after: [string, string] | undefined): SourceRecord[] {
    const time = (s: string) => Date.parse(s);
    const ge = /ModificationTimestamp ge (\S+)/.exec(filter);
    const one = /^ListingKey eq '((?:[^']|'')*)'$/.exec(filter);
    const among = /ListingKey in \(([^)]*)\)/.exec(filter);
    const listed = among
      ? new Set([...among[1].matchAll(/'((?:[^']|'')*)'/g)].map((m) => m[1].replace(/''/g, "'")))
      : undefined;
    const keyset =
      /\(ModificationTimestamp gt (\S+) or \(ModificationTimestamp eq \S+ and ListingKey gt '((?:[^']|'')*)'\)\)/.exec(
        filter,
      );
    const beyond = (r: SourceRecord, t: string, k: string) =>
      time(r.ModificationTimestamp) > time(t) || (time(r.ModificationTimestamp) === time(t) && r.ListingKey > k);
    return [...this.records.values()]
      .filter((r) => !one || r.ListingKey === one[1].replace(/''/g, "'"))
      .filter((r) => !listed || listed.has(r.ListingKey))
      .filter((r) => !ge || time(r.ModificationTimestamp) >= time(ge[1]))
      .filter((r) => !keyset || beyond(r, keyset[1], keyset[2].replace(/''/g, "'")))
      .filter((r) => !after || beyond(r, after[0], after[1]))
      .sort(
        (a, b) =>
          time(a.ModificationTimestamp) - time(b.ModificationTimestamp) || (a.ListingKey < b.ListingKey ? -1 : 1),
      );
  }
}
