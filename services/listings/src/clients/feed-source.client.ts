import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkedLookup, TargetRefused, urlRefusal } from '@estate/platform/net';

export interface SourceAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** The source could not be reached or answered what is not JSON: a failure of the source, not of a record. */
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
    const refusal = urlRefusal(url, this.options.allowPrivateSources);
    if (refusal) return Promise.reject(new SourceUnreachable(`${url} ${refusal}`));
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        target,
        {
          method: init.method ?? 'GET',
          headers: { accept: 'application/json', ...init.headers },
          agent: secure ? this.agents.https : this.agents.http,
          lookup: this.lookup,
          timeout: TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > BODY_LIMIT) req.destroy(new SourceUnreachable(`the answer of ${target.host} is over 64 MB`));
            else chunks.push(chunk);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown = undefined;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              body = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
          });
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

  /**
   * A photo's bytes (a MediaURL: often another host than the service root, so no credentials are sent), at most
   * `limit` bytes; the status when it is not 200.
   */
  download(url: string, limit: number): Promise<{ status: number; bytes?: Buffer }> {
    const refusal = urlRefusal(url, this.options.allowPrivateSources);
    if (refusal) return Promise.reject(new SourceUnreachable(`${url} ${refusal}`));
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        target,
        { agent: secure ? this.agents.https : this.agents.http, lookup: this.lookup, timeout: TIMEOUT_MS },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            return resolve({ status: res.statusCode ?? 0 });
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) req.destroy(new SourceUnreachable(`the photo at ${target.host} is over ${limit} bytes`));
            else chunks.push(chunk);
          });
          res.on('end', () => resolve({ status: 200, bytes: Buffer.concat(chunks) }));
          res.on('error', (err) => reject(new SourceUnreachable(`${target.host}: ${err.message}`, { cause: err })));
        },
      );
      req.on('timeout', () => req.destroy(new SourceUnreachable(`${target.host} did not answer in time`)));
      req.on('error', (err) =>
        reject(err instanceof SourceUnreachable ? err : new SourceUnreachable(`${target.host}: ${err.message}`)),
      );
      req.end();
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
