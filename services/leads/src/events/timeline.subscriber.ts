import type { Bus, Subscription } from '@estate/bus';
import type { ActivitiesService } from '../activities.service';

/**
 * Lands every `leads.activity.recorded` on the timeline. The request that recorded an activity
 * already wrote it there; this consumer is what brings it when that process died right after the
 * lead write (the event is in the lead's outbox, so it is never lost).
 */
export async function subscribeTimeline(deps: { bus: Bus; activities: ActivitiesService }): Promise<Subscription> {
  return deps.bus.subscribe(['leads.activity.recorded'], { durable: 'leads-timeline' }, async ({ payload }) => {
    await deps.activities.materialize(payload);
  });
}
