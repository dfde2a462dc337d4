import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliveryAttemptService } from '../delivery-attempt.service';
import type { DeliveryDoc, DeliveryRepository } from '../repositories/delivery.repository';

/** Due deliveries read at once. */
const CANDIDATES = 64;
/** Held-back pairs remembered at most (one held behind another replica's delivery waits for the poll anyway). */
const WAITING_KEPT = 10_000;

/** The key of an endpoint and resource pair, whose deliveries go one at a time and in order. */
const pairOf = (webhookId: string, resource: string | undefined): string | undefined =>
  resource ? `${webhookId} ${resource}` : undefined;

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

/** A slot taken for a delivery this process is about to queue: stored with its lease, then sent at once. */
export interface Reservation {
  lease: string;
  leaseUntil: string;
  webhookId: string;
  resource?: string;
}

/**
 * Sends due deliveries. Each is claimed with one conditional write (see DeliveryRepository), so
 * replicas never send the same delivery at once, and a crashed process's claims come due again when
 * their lease runs out (at least once). Endpoints at their concurrency bound are left out of the
 * query, so one slow or dead receiver never holds up the deliveries of another.
 *
 * Work queued by this process does not wait for a query: the intake reserves a slot, stores the
 * delivery already claimed, and hands it over (`reserve`, `dispatch`). The store is polled for the
 * rest (retries coming due, work of other replicas, deliveries queued while there was no slot).
 * A delivery whose resource has an earlier one to the same endpoint still on its way waits for it.
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
  /** New work may exist that the candidates do not hold (the poll, work queued without a slot, a full page). */
  private stale = true;
  /** Endpoint and resource pairs whose next delivery waits for the one this process is sending: read again when it ends. */
  private readonly waiting = new Set<string>();
  /** Endpoints whose due work may be in the store and not among the candidates (left out of a read at their bound). */
  private readonly unread = new Set<string>();
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

  /** Looks for due deliveries soon: `fresh` when new work may be due in the store, not when a slot frees. */
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

  /**
   * Takes a slot for a delivery about to be queued by this process, when the process, the endpoint
   * and the resource have room: the caller stores the delivery with this lease (claimed) and then
   * calls `dispatch`, or `cancel` when it was not stored. Null: queue it due now, for whoever is free.
   */
  reserve(webhookId: string, resource: string | undefined): Reservation | null {
    const { concurrency, endpointConcurrency, leaseMs } = this.deps.options;
    const pair = pairOf(webhookId, resource);
    if (
      this.stopped ||
      this.inFlight >= concurrency ||
      (this.perEndpoint.get(webhookId) ?? 0) >= endpointConcurrency ||
      (pair && this.sendingResources.has(pair))
    )
      return null;
    this.take(webhookId, pair);
    return {
      lease: randomUUID(),
      leaseUntil: new Date(this.deps.clock().getTime() + leaseMs).toISOString(),
      webhookId,
      resource: pair,
    };
  }

  /** Sends a delivery stored with its reservation's lease. */
  dispatch(doc: DeliveryDoc, reservation: Reservation): void {
    this.sending.add(doc.id);
    this.track(doc.id, reservation.webhookId, reservation.resource, () =>
      this.deps.attempt.attempt(doc, reservation.lease),
    );
  }

  /**
   * Says deliveries to `webhookId` were queued due now (no slot was free). When the endpoint is at its
   * bound they wait for a slot of it to free (no read now: a backlog must not cost a read per event);
   * otherwise they are looked for at once.
   */
  queued(webhookId: string): void {
    if ((this.perEndpoint.get(webhookId) ?? 0) >= this.deps.options.endpointConcurrency) this.unread.add(webhookId);
    else this.kick(true);
  }

  /** Gives a reservation back (its delivery was not stored, or was stored due now instead). */
  cancel(reservation: Reservation): void {
    this.give(reservation.webhookId, reservation.resource);
    this.kick(false);
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
    // The store is asked only when new work may be there: the poll, work queued without a slot, a
    // page left unread, an endpoint freed whose work was left out. A freed slot alone takes from the
    // candidates already read, so a backlog costs one read per page, not one per delivery.
    for (const webhookId of this.unread)
      if (
        (this.perEndpoint.get(webhookId) ?? 0) < endpointConcurrency &&
        !this.candidates.some((d) => d.webhookId === webhookId)
      )
        this.stale = true;
    if (this.stale) {
      this.stale = false;
      const busy = [...this.perEndpoint].filter(([, n]) => n >= endpointConcurrency).map(([id]) => id);
      const found = await this.deps.deliveries.due(this.deps.clock().toISOString(), busy, CANDIDATES);
      // The read says nothing about the endpoints it left out: their candidates stay, and so does their unread work.
      const left = new Set(busy);
      const ids = new Set(found.map((d) => d.id));
      this.candidates = [...found, ...this.candidates.filter((d) => left.has(d.webhookId) && !ids.has(d.id))];
      this.unread.clear();
      for (const webhookId of left) this.unread.add(webhookId);
      if (found.length === CANDIDATES) this.stale = true;
    }
    let started = 0;
    const kept: DeliveryDoc[] = [];
    for (const doc of this.candidates) {
      const resource = pairOf(doc.webhookId, doc.resource);
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
      // An earlier delivery of the resource to this endpoint is still on its way (maybe from another
      // replica): this one waits for the poll after it, so the receiver gets them in order.
      if (await this.deps.deliveries.holdsBack(doc)) {
        // (Most holders are sent here and clear their pair; the others' pairs are dropped in bulk.)
        if (this.waiting.size >= WAITING_KEPT) this.waiting.clear();
        if (resource) this.waiting.add(resource);
        continue;
      }
      const lease = randomUUID();
      const claimed = await this.deps.deliveries.claim(
        doc,
        lease,
        new Date(this.deps.clock().getTime() + leaseMs).toISOString(),
      );
      if (!claimed) continue;
      this.take(doc.webhookId, resource);
      this.sending.add(doc.id);
      this.track(doc.id, doc.webhookId, resource, () => this.deps.attempt.attempt(doc, lease));
      started++;
    }
    this.candidates = kept;
    return started;
  }

  private take(webhookId: string, resource: string | undefined): void {
    this.inFlight++;
    if (resource) this.sendingResources.add(resource);
    this.perEndpoint.set(webhookId, (this.perEndpoint.get(webhookId) ?? 0) + 1);
  }

  private give(webhookId: string, resource: string | undefined): void {
    this.inFlight--;
    if (resource) this.sendingResources.delete(resource);
    // A delivery of this resource waited for this one: it may go now.
    if (resource && this.waiting.delete(resource)) this.stale = true;
    const left = (this.perEndpoint.get(webhookId) ?? 1) - 1;
    if (left > 0) this.perEndpoint.set(webhookId, left);
    else this.perEndpoint.delete(webhookId);
  }

  /** Runs an attempt holding its slot (taken already), and frees the slot when it ends. */
  private track(id: string, webhookId: string, resource: string | undefined, run: () => Promise<void>): void {
    const attempt = run()
      .catch((err: unknown) => this.deps.log.error({ err, webhookId }, 'delivery attempt failed unexpectedly'))
      .finally(() => {
        this.sending.delete(id);
        this.give(webhookId, resource);
        this.attempts.delete(attempt);
        this.kick(false);
      });
    this.attempts.add(attempt);
  }
}
