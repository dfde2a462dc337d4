import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkedLookup, TargetRefused, targetRefusal, urlRefusal } from '@estate/platform/net';
import { DELIVERY_TIMEOUT_MS } from '../delivery.rules';

export interface ReceiverAnswer {
  /** The HTTP status, or null when none came (refused target, network error, timeout). */
  status: number | null;
  error?: string;
  /** The target was refused before any connection (http, private, loopback or link-local, not allowed). */
  refused?: true;
  responseTimeMs: number;
}

const BODY_LIMIT = 64 * 1024;

/** Sends deliveries over HTTPS (HTTP too when private targets are allowed), reusing connections. */
export class ReceiverClient {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly lookup: LookupFunction;

  constructor(private readonly options: { allowPrivateTargets: boolean; timeoutMs?: number }) {
    this.lookup = checkedLookup(options.allowPrivateTargets);
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
      https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
    };
  }

  /** Resolves the target's addresses and says why they may not be reached, or null when they may. */
  refusal(url: string): Promise<string | null> {
    return targetRefusal(url, this.options.allowPrivateTargets);
  }

  post(url: string, body: string, headers: Record<string, string>): Promise<ReceiverAnswer> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const form = urlRefusal(url, this.options.allowPrivateTargets);
    if (form)
      return Promise.resolve({ status: null, error: `target refused: ${form}`, refused: true, responseTimeMs: 0 });
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    return new Promise((resolve) => {
      let settled = false;
      const done = (answer: Omit<ReceiverAnswer, 'responseTimeMs'>) => {
        if (settled) return;
        settled = true;
        resolve({ ...answer, responseTimeMs: elapsed() });
      };
      const request = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          agent: secure ? this.agents.https : this.agents.http,
          lookup: this.lookup,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'user-agent': 'estate-webhooks/1',
          },
          signal: AbortSignal.timeout(this.options.timeoutMs ?? DELIVERY_TIMEOUT_MS),
        },
        (response) => {
          // The body is read (and dropped past a limit) so the connection can be reused.
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > BODY_LIMIT) response.destroy();
          });
          response.on('end', () => done({ status: response.statusCode ?? null }));
          response.on('close', () => done({ status: response.statusCode ?? null }));
          response.on('error', () => done({ status: response.statusCode ?? null }));
        },
      );
      request.on('error', (err) =>
        done({
          status: null,
          ...(err instanceof TargetRefused ? { refused: true as const } : {}),
          error:
            err instanceof TargetRefused
              ? `target refused: ${err.message}`
              : err.name === 'AbortError' || err.name === 'TimeoutError'
                ? 'no answer within 10 s'
                : `request failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
        }),
      );
      request.end(body);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
