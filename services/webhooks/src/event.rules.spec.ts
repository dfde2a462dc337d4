import type { BusMessage } from '@estate/bus';
import { clientEventId, mediaEventType, planEvents, subscribes, type ConsumedSubject } from './event.rules';

const base = { eventId: 'e1', accountId: 'acc_1', version: 2, occurredAt: '2026-01-01T00:00:00.000Z' };
const message = (subject: ConsumedSubject, payload: Record<string, unknown>) =>
  ({ subject, payload: { ...base, ...payload }, deliveryCount: 1 }) as unknown as BusMessage<ConsumedSubject>;

describe('client events from domain events', () => {
  it('maps a status change to lead.updated and lead.status_changed, with stable distinct ids', () => {
    const plans = planEvents(message('leads.lead.updated', { leadId: 'led_1', changes: ['status', 'tags'] }));
    expect(plans.map((p) => p.type)).toEqual(['lead.updated', 'lead.status_changed']);
    expect(plans[0].id).not.toBe(plans[1].id);
    expect(plans[0].id).toBe(clientEventId('e1', 'lead.updated'));
    expect(plans[0].source).toEqual({ kind: 'lead', leadId: 'led_1' });
    expect(
      planEvents(message('leads.lead.updated', { leadId: 'led_1', changes: ['tags'] })).map((p) => p.type),
    ).toEqual(['lead.updated']);
  });

  it('maps a deletion to its tombstone, a score to lead.updated, and only processed media', () => {
    expect(planEvents(message('listings.listing.deleted', { listingId: 'lst_1' }))[0]).toMatchObject({
      type: 'listing.deleted',
      source: { kind: 'inline', data: { id: 'lst_1', deleted: true, version: 2 } },
    });
    expect(planEvents(message('leads.lead.scored', { leadId: 'led_1' }))[0].type).toBe('lead.updated');
    expect(
      planEvents(message('media.media.changed', { listingId: 'l', change: 'reordered', mediaIds: ['m'] })),
    ).toEqual([]);
    const processed = planEvents(
      message('media.media.changed', { listingId: 'l', change: 'processed', mediaIds: ['a', 'b'] }),
    );
    expect(processed.map((p) => p.source)).toEqual([
      { kind: 'media', listingId: 'l', mediaId: 'a' },
      { kind: 'media', listingId: 'l', mediaId: 'b' },
    ]);
    expect(processed[0].id).not.toBe(processed[1].id);
    expect([mediaEventType('ready'), mediaEventType('failed'), mediaEventType('processing')]).toEqual([
      'media.ready',
      'media.failed',
      null,
    ]);
  });

  it('maps an ended bulk job to job.completed with the job as data', () => {
    const job = {
      id: 'job_1',
      state: 'partially_failed',
      progress: { total: 2, processed: 2, succeeded: 1, failed: 1 },
    };
    const [plan, ...more] = planEvents(message('listings.bulk-job.completed', { jobId: 'job_1', job }));
    expect(more).toEqual([]);
    expect(plan).toMatchObject({ type: 'job.completed', source: { kind: 'inline', data: job } });
    expect(plan.id).toBe(clientEventId('e1', 'job.completed'));
  });

  it('matches subscriptions', () => {
    expect(subscribes(['*'], 'lead.created')).toBe(true);
    expect(subscribes(['lead.created'], 'lead.created')).toBe(true);
    expect(subscribes(['lead.created'], 'lead.updated')).toBe(false);
  });
});
