import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

export interface ListenOptions {
  /** The API, e.g. `http://127.0.0.1:3000`. */
  apiUrl: string;
  /** A key that may read the change feed (admin or integration). */
  apiKey: string;
  /** Where each event is posted, e.g. `http://127.0.0.1:4000/hook`. */
  forwardTo: string;
  /** The Standard Webhooks secret the deliveries are signed with. */
  secret: string;
  /** Only these event types (all when empty). */
  types: string[];
  /** Pause between polls once up to date. */
  intervalMs: number;
  signal: AbortSignal;
  print: (line: string) => void;
}

/** A fresh signing secret, as the webhooks service makes them: `whsec_` + 24 random bytes in base64. */
export const newListenSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

interface FeedPage {
  items: { id: string; type: string; createdAt: string }[];
  nextCursor: string;
}

async function readFeed(options: ListenOptions, cursor: string): Promise<FeedPage> {
  const url = new URL('/v1/events', options.apiUrl);
  url.searchParams.set('limit', '100');
  url.searchParams.set('after', cursor);
  if (options.types.length > 0) url.searchParams.set('types', options.types.join(','));
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${options.apiKey}` },
    signal: options.signal,
  }).catch((err: unknown) => {
    if (options.signal.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `Cannot reach the API at ${options.apiUrl} (${cause?.code ?? cause?.message ?? (err as Error).message}): start the product there, or name it with --url (the default follows HOST and PORT)`,
    );
  });
  const body = (await response.json().catch(() => null)) as (FeedPage & { detail?: string }) | null;
  if (!response.ok || !body)
    throw new Error(`The change feed answered ${response.status}: ${body?.detail ?? 'no problem details'}`);
  return body;
}

/**
 * Follows the account's change feed from now on and posts every new event to `forwardTo`, signed as the webhooks
 * service signs its deliveries (Standard Webhooks), so a receiver on a laptop gets what a registered endpoint
 * would, without the product ever calling a private address. Ends when `signal` aborts; a feed error ends it too.
 */
export async function listenAndForward(options: ListenOptions): Promise<void> {
  const signer = new Webhook(options.secret);
  // What happened before the listener started is history, not news: skip to the end of the feed, and leave out
  // the events that become visible only now (the feed shows an event about a second after it happened).
  const startedAt = Date.now();
  let cursor = '';
  for (;;) {
    const page = await readFeed(options, cursor);
    cursor = page.nextCursor;
    if (page.items.length === 0) break;
  }
  options.print(`Ready: forwarding new events to ${options.forwardTo} (Ctrl-C to stop)`);
  while (!options.signal.aborted) {
    let page: FeedPage;
    try {
      page = await readFeed(options, cursor);
    } catch (err) {
      if (options.signal.aborted) return;
      throw err;
    }
    for (const event of page.items.filter((e) => Date.parse(e.createdAt) >= startedAt)) {
      const body = JSON.stringify(event);
      const at = new Date();
      const headers = {
        'content-type': 'application/json',
        'webhook-id': event.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signer.sign(event.id, at, body),
      };
      const started = Date.now();
      const answer = await fetch(options.forwardTo, { method: 'POST', headers, body, signal: options.signal }).then(
        (r) => String(r.status),
        (err: unknown) => `failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      options.print(`${at.toISOString()}  --> ${event.type} ${event.id}  [${answer}] ${Date.now() - started} ms`);
    }
    cursor = page.nextCursor;
    if (page.items.length === 0) await sleep(options.intervalMs, undefined, { signal: options.signal }).catch(() => {});
  }
}
