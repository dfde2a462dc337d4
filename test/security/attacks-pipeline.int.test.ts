import { eventually } from '@estate/testing';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

/** Event types of the lead pipeline. */
const PIPELINE = ['lead.created', 'lead.updated', 'lead.assigned', 'lead.status_changed', 'activity.created'];

describe('attacks on the lead pipeline by keys that may not read it', () => {
  let t: Target;
  beforeEach(async () => {
    t = await startTarget();
  });
  afterEach(() => t.close());

  it("an integration key's change feed carries listing, media and job events, never a lead or an activity", async () => {
    const lead = await t.lead(ADMIN, { name: 'Private Person', email: 'private.person@example.com' });
    const note = await t.call(ADMIN, 'POST', `/v1/leads/${lead.id}/activities`, {
      type: 'note',
      summary: 'pre-approved up to 2M',
    });
    expect(note.statusCode).toBe(201);
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { status: 'contacted' })).statusCode).toBe(200);
    const listing = await t.listing(ADMIN);
    const integration = await t.key(ADMIN, 'integration');

    // The admin's feed holds the pipeline in full, so the events are there to be read.
    const adminFeed = await eventually(async () => {
      const page = (await t.call(ADMIN, 'GET', '/v1/events?limit=100')).json();
      const types = page.items.map((e: { type: string }) => e.type);
      expect(types).toEqual(expect.arrayContaining(['lead.created', 'activity.created', 'listing.created']));
      return page;
    });
    expect(JSON.stringify(adminFeed)).toContain('private.person@example.com');

    // Asked by name, lead and activity events are refused before anything is read.
    for (const types of [PIPELINE.join(','), 'listing.created,lead.updated', 'activity.created']) {
      const res = await t.call(integration.secret, 'GET', `/v1/events?types=${types}`);
      expectProblem(res, 403, 'forbidden');
      expect(res.body).not.toMatch(/Private Person|private\.person|pre-approved/);
    }
    // Unfiltered, the feed carries everything else and nothing of the pipeline.
    const feed = (await t.call(integration.secret, 'GET', '/v1/events?limit=100')).json();
    const types = feed.items.map((e: { type: string }) => e.type);
    expect(types).toContain('listing.created');
    expect(types.filter((type: string) => PIPELINE.includes(type))).toEqual([]);
    expect(feed.items.find((e: { type: string }) => e.type === 'listing.created').data.id).toBe(listing.id);
    expect(JSON.stringify(feed)).not.toMatch(/Private Person|private\.person|pre-approved|led_/);
    // Its cursor moves past the pipeline's events: the next page is empty, not a replay.
    const next = (await t.call(integration.secret, 'GET', `/v1/events?after=${feed.nextCursor}`)).json();
    expect(next.items).toEqual([]);

    // Webhook endpoints are an admin's to create, and may carry the pipeline in full.
    const hook = await t.call(ADMIN, 'POST', '/v1/webhooks', {
      url: 'https://crm.example.com/hooks/estate',
      events: ['lead.created', 'activity.created'],
    });
    expect(hook.statusCode).toBe(201);
    expectProblem(
      await t.call(integration.secret, 'POST', '/v1/webhooks', { url: 'https://x.example.com/h', events: ['*'] }),
      403,
      'forbidden',
    );
  });
});
