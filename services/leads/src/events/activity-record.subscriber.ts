import type { Bus, Subscription } from '@estate/bus';
import type { Logger } from 'pino';
import type { ActivitiesService } from '../activities.service';

/** `leads.activity.record` commands from other services: each recorded once, by its event id. */
export async function subscribeActivityCommands(deps: { bus: Bus; activities: ActivitiesService; log: Logger }): Promise<Subscription> {
  return deps.bus.subscribe(['leads.activity.record'], { durable: 'leads-activity-record' }, async ({ payload, requestId, deliveryCount }) => {
    const outcome = await deps.activities.recordFromBus(payload, requestId);
    deps.log.info({ eventId: payload.eventId, leadId: payload.leadId, source: payload.source, outcome, deliveryCount, requestId }, 'activity command');
  });
}
