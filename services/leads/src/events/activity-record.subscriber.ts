import { EVENT_CONCURRENCY, type Bus, type Subscription } from '@estate/bus';
import type { Logger } from 'pino';
import type { ActivitiesService } from '../activities.service';

/** `leads.activity.record` commands from other services: each recorded once, by its event id. */
export class ActivityRecordSubscriber {
  private subscription?: Subscription;

  constructor(private readonly deps: { bus: Bus; activities: ActivitiesService; log: Logger }) {}

  async start(): Promise<void> {
    this.subscription = await this.deps.bus.subscribe(
      ['leads.activity.record'],
      { durable: 'leads-activity-record', concurrency: EVENT_CONCURRENCY, orderKey: (m) => m.payload.leadId },
      async ({ payload, requestId, deliveryCount }) => {
        const outcome = await this.deps.activities.recordFromBus(payload, requestId);
        this.deps.log.info(
          {
            eventId: payload.eventId,
            leadId: payload.leadId,
            source: payload.source,
            outcome,
            deliveryCount,
            requestId,
          },
          'activity command',
        );
      },
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}
