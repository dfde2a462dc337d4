import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  /** The endpoint name: the last path segment of the URL it was sent to. */
  endpoint: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The envelope, once the `standardwebhooks` library verified its signature; null when it did not verify. */
  event: { id: string; type: string; createdAt: string; accountId: string; data: Record<string, unknown> } | null;
  verifyError?: string;
  receivedAt: number;
}

/** What the receiver answers a delivery: a status code, or `hang` (never answer; the connection stays open). */
export type ReceiverBehaviour = (delivery: ReceivedDelivery, attempt: number) => number | 'hang';

/**
 * A webhook receiver on 127.0.0.1, as an integrator would write one: it verifies every delivery with
 * the `standardwebhooks` npm package (never with the product's own code) against the secret of the
 * endpoint it was sent to (`/hooks/<name>`), records it, and answers as told (200 by default).
 */
export class WebhookReceiver {
  readonly deliveries: ReceivedDelivery[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly attempts = new Map<string, number>();
  private behaviour: ReceiverBehaviour = () => 200;
  private readonly hanging = new Set<() => void>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    // Node's default. A hint of 1 s or less makes Node clients drop the connection after each answer
    // (they keep a one-second margin), so every delivery would open a new connection.
    server.keepAliveTimeout = 5000;
    const receiver = new WebhookReceiver(server);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answer = receiver.receive(req.url ?? '/', req.headers, Buffer.concat(chunks).toString('utf8'));
        if (answer === 'hang') {
          receiver.hanging.add(() => res.destroy());
          return;
        }
        res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'no');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The URL of endpoint `name` (register it with `secret` once the product answered it). */
  url(name: string): string {
    return `${this.baseUrl}/hooks/${name}`;
  }

  secret(name: string, secret: string): void {
    this.secrets.set(name, secret);
  }

  answer(behaviour: ReceiverBehaviour): void {
    this.behaviour = behaviour;
  }

  /** Verified deliveries to one endpoint, in arrival order. */
  verified(name: string): ReceivedDelivery[] {
    return this.deliveries.filter((d) => d.endpoint === name && d.event !== null);
  }

  /** Deliveries that failed signature verification (a correct product sends none). */
  unverified(): ReceivedDelivery[] {
    return this.deliveries.filter((d) => d.event === null);
  }

  async stop(): Promise<void> {
    for (const drop of this.hanging) drop();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receive(url: string, headers: IncomingHttpHeaders, body: string): number | 'hang' {
    const endpoint = url.split('?')[0].split('/').pop() ?? '';
    const delivery: ReceivedDelivery = { endpoint, headers, body, event: null, receivedAt: Date.now() };
    const secret = this.secrets.get(endpoint);
    try {
      if (!secret) throw new Error(`no secret registered for endpoint ${endpoint}`);
      delivery.event = new Webhook(secret).verify(body, headers as Record<string, string>) as ReceivedDelivery['event'];
    } catch (err) {
      delivery.verifyError = (err as Error).message;
    }
    this.deliveries.push(delivery);
    if (!delivery.event) return 400;
    const key = `${endpoint}:${delivery.event.id}`;
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    return this.behaviour(delivery, attempt);
  }
}
