import type { Logger } from 'pino';
import { FEED_RETENTION_MS } from '../feed.service';
import type { DeliveryRepository } from '../repositories/delivery.repository';
import type { FeedRepository } from '../repositories/feed.repository';

const EVERY_MS = 60 * 60 * 1000;

/** Drops feed events and finished deliveries older than 30 days, hourly (every replica may; deletes are idempotent). */
export class RetentionWorker {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly deps: { feed: FeedRepository; deliveries: DeliveryRepository; clock: () => Date; log: Logger },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.purge(), EVERY_MS);
    this.timer.unref();
  }

  async purge(): Promise<void> {
    const before = new Date(this.deps.clock().getTime() - FEED_RETENTION_MS).toISOString();
    try {
      const events = await this.deps.feed.purge(before);
      const deliveries = await this.deps.deliveries.purge(before);
      if (events + deliveries > 0) this.deps.log.info({ events, deliveries }, 'dropped feed events older than 30 days');
    } catch (err) {
      this.deps.log.warn({ err }, 'feed retention purge failed; will retry');
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
