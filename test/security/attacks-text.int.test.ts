import { listingBody } from '@estate/testing';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

const LONE_HIGH = 'Bob \ud800';
const LONE_LOW = '\udc00 trailing';

describe('attacks with text that is not valid Unicode', () => {
  let t: Target;
  beforeEach(async () => {
    t = await startTarget();
  });
  afterEach(() => t.close());

  it('a lone surrogate in any string field or key of a JSON body is 422 naming the field, and nothing is stored', async () => {
    const lead = await t.lead(ADMIN, { name: 'Ann Valid' });
    const listing = await t.listing(ADMIN);
    const attempts: Array<[string, string, unknown, string]> = [
      ['POST', '/v1/leads', { name: LONE_HIGH, email: 'bob@example.com', source: 'web' }, 'name'],
      ['POST', '/v1/leads', { name: 'Bob', email: 'bob@example.com', source: LONE_LOW }, 'source'],
      ['PATCH', `/v1/leads/${lead.id}`, { name: LONE_HIGH }, 'name'],
      ['PATCH', `/v1/leads/${lead.id}`, { tags: ['ok', LONE_LOW] }, 'tags.1'],
      [
        'POST',
        `/v1/leads/${lead.id}/activities`,
        { type: 'note', summary: 'x', data: { nested: { [LONE_HIGH]: 1 } } },
        'data.nested.Bob \ufffd',
      ],
      ['POST', '/v1/listings', listingBody({ propertyDetails: { propertyType: 'land', description: LONE_LOW } }), ''],
      ['PATCH', `/v1/listings/${listing.id}`, { propertyDetails: { description: LONE_HIGH } }, ''],
      ['POST', '/v1/agents', { name: LONE_HIGH, email: 'agent@example.com' }, 'name'],
      [
        'POST',
        '/v1/webhooks',
        { url: 'https://crm.example.com/h', events: ['*'], description: LONE_LOW },
        'description',
      ],
    ];
    for (const [method, url, body, path] of attempts) {
      const res = await t.call(ADMIN, method as 'POST', url, body);
      expect({ url, status: res.statusCode }).toEqual({ url, status: 422 });
      expectProblem(res, 422, 'validation_failed');
      const paths = res.json().errors.map((e: { path: string }) => e.path);
      if (path) expect(paths).toContain(path);
      else expect(paths.join()).toMatch(/description/);
      // The answer itself is valid Unicode: a strict reader takes it.
      expect(() => new TextDecoder('utf-8', { fatal: true }).decode(res.rawPayload)).not.toThrow();
      expect(res.body).not.toMatch(/\\ud[89a-f]/i);
    }
    const leads = (await t.call(ADMIN, 'GET', '/v1/leads')).json();
    expect(leads.items.map((l: { name: string }) => l.name)).toEqual(['Ann Valid']);
    expect(leads.items[0].tags).toEqual([]);
    expect((await t.call(ADMIN, 'GET', '/v1/listings')).json().total).toBe(1);
    expect((await t.call(ADMIN, 'GET', '/v1/agents')).json().total).toBe(0);
    expect((await t.call(ADMIN, 'GET', '/v1/webhooks')).json().items).toHaveLength(0);

    // A surrogate pair (an emoji) is valid text and is kept as sent.
    const emoji = await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { name: 'Ann \ud83c\udfe1' });
    expect(emoji.statusCode).toBe(200);
    expect(emoji.json().name).toBe('Ann 🏡');
  });
});
