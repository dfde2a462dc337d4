import type { Bus, Subscription } from '@estate/bus';
import type { EventIntakeService } from '../event-intake.service';
import { consumedSubjects } from '../event.rules';

/** An event whose resource cannot be read yet (its service is down) is retried this often, about 5 s apart: some 40 minutes. */
const MAX_DELIVER = 500;

/**
 * Every durable domain event, one durable consumer per stream (replicas share each), handed to the
 * intake in the order the stream holds them. Handlers are idempotent: redeliveries add nothing.
 */
export class DomainEventsSubscriber {
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly deps: {
      bus: Bus;
      intake: EventIntakeService;
      /** Events of a stream handed to the intake at once (it starts their units in the stream's order). */
      concurrency: number;
    },
  ) {}

  async start(): Promise<void> {
    for (const [stream, subjects] of Object.entries(consumedSubjects)) {
      this.subscriptions.push(
        await this.deps.bus.subscribe(
          subjects,
          { durable: `webhooks-${stream}`, maxDeliver: MAX_DELIVER, concurrency: this.deps.concurrency },
          (m) => this.deps.intake.handle(m),
        ),
      );
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.subscriptions.map((s) => s.stop()));
    this.subscriptions = [];
  }
}
