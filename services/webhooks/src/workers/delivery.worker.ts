import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliveryAttemptService } from '../delivery-attempt.service';
import type { DeliveryDoc, DeliveryRepository } from '../repositories/delivery.repository';

/** Due deliveries read at once. */
const CANDIDATES = 200;

export interface DeliveryWorkerOptions {
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  /** Deliveries in flight at once to one endpoint: a slow receiver holds at most this many slots. */
  endpointConcurrency: number;
  /** How long a claim holds a delivery (longer than the 10 s receiver timeout). */
  leaseMs: number;
  /** How often the store is polled for due deliveries (retries, and work queued by other replicas). */
  pollMs: number;
}

/**
 * Sends due deliveries. Each is claimed with one conditional write (see DeliveryRepository), so
 * replicas never send the same delivery at once, and a crashed process's claims come due again when
 * their lease runs out (at least once). Endpoints at their concurrency bound are left out of the
 * query, so one slow or dead receiver never holds up the deliveries of another.
 */
export class DeliveryWorker {
  private inFlight = 0;
  private readonly perEndpoint = new Map<string, number>();
  /** Deliveries this process is sending: never claimed again here, even when a slow attempt outlives its lease. */
  private readonly sending = new Set<string>();
  /** Endpoint and resource pairs being sent: a resource's next event to an endpoint waits for the one before. */
  private readonly sendingResources = new Set<string>();
  private readonly attempts = new Set<Promise<void>>();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  /**
   * Due deliveries from the last query, not yet started here. A freed slot takes the next of them
   * without asking the store again; the claim still checks each one is due and unclaimed.
   */
  private candidates: DeliveryDoc[] = [];
  /** New work may exist that the candidates do not hold (work queued, retries coming due). */
  private stale = true;
  private stopped = true;

  constructor(
    private readonly deps: {
      deliveries: DeliveryRepository;
      attempt: DeliveryAttemptService;
      options: DeliveryWorkerOptions;
      clock: () => Date;
      log: Logger;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.kick();
    this.timer = setInterval(() => this.kick(true), this.deps.options.pollMs);
    this.timer.unref();
  }

  /** Looks for due deliveries soon: `fresh` when new work may be due (queued, or the poll), not when a slot frees. */
  kick(fresh = true): void {
    if (this.stopped) return;
    if (fresh) this.stale = true;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Stops claiming and waits for the attempts in flight (each ends within the receiver timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.running) await this.running;
    await Promise.allSettled([...this.attempts]);
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        while (!this.stopped && (await this.pass()) > 0);
      } catch (err) {
        this.deps.log.error({ err }, 'delivery pass failed; will retry');
        return;
      }
    } while (this.again && !this.stopped);
  }

  /** Claims and starts what it can; how many it started. */
  private async pass(): Promise<number> {
    const { concurrency, endpointConcurrency, leaseMs } = this.deps.options;
    const free = concurrency - this.inFlight;
    if (free <= 0) return 0;
    if (this.stale || this.candidates.length === 0) {
      this.stale = false;
      const busy = [...this.perEndpoint].filter(([, n]) => n >= endpointConcurrency).map(([id]) => id);
      this.candidates = await this.deps.deliveries.due(this.deps.clock().toISOString(), busy, CANDIDATES);
    }
    let started = 0;
    const kept: DeliveryDoc[] = [];
    for (const doc of this.candidates) {
      const resource = doc.resource ? `${doc.webhookId} ${doc.resource}` : undefined;
      if (
        this.stopped ||
        this.inFlight >= concurrency ||
        (this.perEndpoint.get(doc.webhookId) ?? 0) >= endpointConcurrency ||
        this.sending.has(doc.id) ||
        (resource && this.sendingResources.has(resource))
      ) {
        kept.push(doc);
        continue;
      }
      const lease = randomUUID();
      const claimed = await this.deps.deliveries.claim(
        doc,
        lease,
        new Date(this.deps.clock().getTime() + leaseMs).toISOString(),
      );
      if (!claimed) continue;
      this.launch(claimed, resource, () => this.deps.attempt.attempt(doc, lease));
      started++;
    }
    this.candidates = kept;
    return started;
  }

  private launch(
    { id, webhookId }: { id: string; webhookId: string },
    resource: string | undefined,
    run: () => Promise<void>,
  ): void {
    this.inFlight++;
    this.sending.add(id);
    if (resource) this.sendingResources.add(resource);
    this.perEndpoint.set(webhookId, (this.perEndpoint.get(webhookId) ?? 0) + 1);
    const attempt = run()
      .catch((err: unknown) => this.deps.log.error({ err, webhookId }, 'delivery attempt failed unexpectedly'))
      .finally(() => {
        this.inFlight--;
        this.sending.delete(id);
        if (resource) this.sendingResources.delete(resource);
        const left = (this.perEndpoint.get(webhookId) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(webhookId, left);
        else this.perEndpoint.delete(webhookId);
        this.attempts.delete(attempt);
        this.kick(false);
      });
    this.attempts.add(attempt);
  }
}
