import { eventually } from '@estate/testing';
import { lead, leadEvent } from './fixtures';
import { admin, ResourceShelf, startWebhooks, type WebhooksHarness } from './harness';

describe('the intake reads events at once and stores them in the order of the stream', () => {
  let h: WebhooksHarness;
  afterEach(async () => h?.close());

  it('an event whose resource is read slowly still comes first in the feed', async () => {
    const shelf = new ResourceShelf();
    const read = shelf.lead;
    let fastAsked!: () => void;
    const fastWasAsked = new Promise<void>((resolve) => (fastAsked = resolve));
    // The first lead is read only once the intake asked for the second: both are being handled at once.
    shelf.lead = async (accountId, leadId) => {
      if (leadId === 'led_slow') await fastWasAsked;
      if (leadId === 'led_fast') fastAsked();
      return read(accountId, leadId);
    };
    h = await startWebhooks({ shelf });
    await Promise.all([
      leadEvent(h.bus, shelf, admin.accountId, 'leads.lead.created', lead('led_slow')),
      leadEvent(h.bus, shelf, admin.accountId, 'leads.lead.created', lead('led_fast')),
    ]);
    const page = await eventually(async () => {
      const res = (await h.call(admin, 'GET', '/v1/events')).json();
      expect(res.items).toHaveLength(2);
      return res;
    });
    expect(page.items.map((e: { data: { id: string } }) => e.data.id)).toEqual(['led_slow', 'led_fast']);
  });
});
