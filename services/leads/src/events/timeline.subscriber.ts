import { EVENT_CONCURRENCY, type Bus, type Subscription } from '@estate/bus';
import type { ActivitiesService } from '../activities.service';

/**
 * Lands every `leads.activity.recorded` on the timeline. The request that recorded an activity
 * already wrote it there; this consumer is what brings it when that process died right after the
 * lead write (the event is in the lead's outbox, so it is never lost).
 */
export class TimelineSubscriber {
  private subscription?: Subscription;

  constructor(private readonly deps: { bus: Bus; activities: ActivitiesService }) {}

  async start(): Promise<void> {
    this.subscription = await this.deps.bus.subscribe(
      ['leads.activity.recorded'],
      { durable: 'leads-timeline', concurrency: EVENT_CONCURRENCY, orderKey: (m) => m.payload.leadId },
      async ({ payload }) => {
        await this.deps.activities.materialize(payload);
      },
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}
