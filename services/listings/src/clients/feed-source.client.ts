import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkedLookup, TargetRefused, urlRefusal } from '@estate/platform/net';

export interface SourceAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  /** The answer had a body that is not JSON (an HTML error page, a cut-off answer): its start, for the reason. */
  notJson?: string;
}

/** The source could not be reached (or its answer broke off, or was too large): a failure of the source, not of a record. */
export class SourceUnreachable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SourceUnreachable';
  }
}

const TIMEOUT_MS = 60_000;
/** A page of 1000 records with long remarks stays well under this. */
const BODY_LIMIT = 64 * 1024 * 1024;

/**
 * Requests to feed sources (RESO Web API servers and their token endpoints): https (http too when private sources
 * are allowed), the target checked by its form and again by the addresses it resolves to when connecting.
 */
export class FeedSourceClient {
  private readonly lookup: LookupFunction;
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 16 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 16 }),
  };

  constructor(private readonly options: { allowPrivateSources: boolean }) {
    this.lookup = checkedLookup(options.allowPrivateSources);
  }

  request(
    url: string,
    init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
  ): Promise<SourceAnswer> {
    return this.exchange(url, {
      ...init,
      headers: { accept: 'application/json', 'odata-maxversion': '4.01', ...init.headers },
      limit: BODY_LIMIT,
      tooLarge: (host) => `the answer of ${host} is over 64 MB`,
    }).then(({ status, headers, bytes }) => {
      const text = bytes?.toString('utf8');
      if (!text?.trim()) return { status, headers, body: undefined, notJson: '' };
      try {
        return { status, headers, body: JSON.parse(text) as unknown };
      } catch {
        return { status, headers, body: undefined, notJson: text.replace(/\s+/g, ' ').trim().slice(0, 60) };
      }
    });
  }

  /**
   * A photo's bytes (a MediaURL: often another host than the service root, so no credentials are sent), at most
   * `limit` bytes; the status when it is not 200.
   */
  async download(url: string, limit: number): Promise<{ status: number; bytes?: Buffer }> {
    const { status, bytes } = await this.exchange(url, {
      limit,
      tooLarge: (host) => `the photo at ${host} is over ${limit} bytes`,
      onlyOk: true,
    });
    return bytes ? { status, bytes } : { status };
  }

  /**
   * One request through the checked lookup and the keep-alive agents: the answer's status, headers and body (at most
   * `limit` bytes; with `onlyOk`, no body unless the status is 200). Every failure is a SourceUnreachable.
   */
  private exchange(
    url: string,
    init: {
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string;
      limit: number;
      tooLarge: (host: string) => string;
      onlyOk?: boolean;
    },
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes?: Buffer }> {
    const refusal = urlRefusal(url, this.options.allowPrivateSources);
    if (refusal) return Promise.reject(new SourceUnreachable(`${url} ${refusal}`));
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        target,
        {
          method: init.method ?? 'GET',
          ...(init.headers ? { headers: init.headers } : {}),
          agent: secure ? this.agents.https : this.agents.http,
          lookup: this.lookup,
          timeout: TIMEOUT_MS,
        },
        (res) => {
          const status = res.statusCode ?? 0;
          if (init.onlyOk && status !== 200) {
            res.resume();
            return resolve({ status, headers: res.headers });
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > init.limit) req.destroy(new SourceUnreachable(init.tooLarge(target.host)));
            else chunks.push(chunk);
          });
          res.on('end', () => resolve({ status, headers: res.headers, bytes: Buffer.concat(chunks) }));
          res.on('error', (err) => reject(new SourceUnreachable(`${target.host}: ${err.message}`, { cause: err })));
        },
      );
      req.on('timeout', () => req.destroy(new SourceUnreachable(`${target.host} did not answer in time`)));
      req.on('error', (err) =>
        reject(
          err instanceof SourceUnreachable
            ? err
            : new SourceUnreachable(
                err instanceof TargetRefused ? `target refused: ${err.message}` : `${target.host}: ${err.message}`,
                { cause: err },
              ),
        ),
      );
      if (init.body !== undefined) req.write(init.body);
      req.end();
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
