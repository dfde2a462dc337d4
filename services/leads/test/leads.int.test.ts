import { leadStatuses, scoreComponentNames, type Lead, type LeadStatus } from '@estate/contracts/leads';
import { canTransition } from '../src/pipeline.rules';
import {
  admin,
  agentKey,
  integration,
  listing,
  otherAccount,
  publishListing,
  startLeads,
  type LeadsHarness,
} from './harness';

type Body = Record<string, unknown>;

describe('leads over HTTP (embedded adapters, signed identity)', () => {
  let h: LeadsHarness;
  let now: Date;
  const tick = (ms: number) => (now = new Date(now.getTime() + ms));

  const capture = async (body: Body, who = admin) => h.call(who, 'POST', '/v1/leads', body);
  const created = async (body: Body, who = admin): Promise<Lead> => {
    const res = await capture(body, who);
    expect([200, 201]).toContain(res.statusCode);
    return res.json();
  };
  const get = async (id: string, who = admin) => h.call(who, 'GET', `/v1/leads/${id}`);
  const patch = async (id: string, body: Body, who = admin, headers: Record<string, string> = {}) =>
    h.call(who, 'PATCH', `/v1/leads/${id}`, body, headers);
  const search = async (query: string, who = admin) => h.call(who, 'GET', `/v1/leads${query}`);
  const ids = (res: { json(): { items: { id: string }[] } }) => res.json().items.map((l) => l.id);
  const timeline = async (id: string, who = admin) =>
    (await h.call(who, 'GET', `/v1/leads/${id}/activities?limit=100`)).json().items as {
      type: string;
      data: Body;
      summary: string;
    }[];
  const pointsOf = (l: Lead) => scoreComponentNames.reduce((n, c) => n + l.scoreBreakdown.components[c].points, 0);

  beforeEach(async () => {
    now = new Date('2025-03-10T12:00:00.000Z');
    h = await startLeads({ clock: () => now });
  });
  afterEach(async () => h.close());

  describe('capture', () => {
    it('creates a lead with normalised contact fields, an inquiry on its timeline, a score, ETag and Location, and publishes its events', async () => {
      const res = await capture({
        name: 'Jane Doe',
        email: '  Jane.Doe@Example.COM ',
        phone: '(512) 555-0100',
        source: 'Open House',
        message: 'Is it still available?',
        tags: ['buyer', 'buyer'],
      });
      expect(res.statusCode).toBe(201);
      const lead = res.json();
      expect(lead).toMatchObject({
        id: expect.stringMatching(/^lead_/),
        name: 'Jane Doe',
        email: 'jane.doe@example.com',
        phone: '+15125550100',
        source: 'open-house',
        status: 'new',
        agentId: null,
        assignment: null,
        scoreSource: 'engine',
        tags: ['buyer'],
        propertyInterests: [],
        duplicate: false,
        version: 1,
        createdAt: now.toISOString(),
        lastActivityAt: now.toISOString(),
      });
      expect(lead.latestActivities).toEqual([
        expect.objectContaining({ type: 'inquiry', summary: 'Is it still available?', occurredAt: now.toISOString() }),
      ]);
      expect(lead.score).toBe(lead.scoreBreakdown.engineScore);
      expect(pointsOf(lead)).toBe(lead.score);
      expect(res.headers.etag).toBe('"1"');
      expect(res.headers.location).toBe(`/v1/leads/${lead.id}`);
      expect(lead).not.toHaveProperty('accountId');
      expect(await timeline(lead.id)).toEqual([
        expect.objectContaining({ type: 'inquiry', data: { source: 'open-house', duplicate: false, listingIds: [] } }),
      ]);
      await h.runtime.relay.flush();
      expect(h.events.map((e) => e.subject)).toEqual(['leads.lead.created', 'leads.activity.recorded']);
      expect(h.events[0].payload).toMatchObject({
        accountId: 'acc_alice',
        leadId: lead.id,
        version: 1,
        lead: { email: 'jane.doe@example.com', phone: '+15125550100' },
      });
    });

    it('returns the existing lead for the same email written differently (200, duplicate: true), merging interests and tags, with the inquiry on its timeline', async () => {
      const first = await created({
        name: 'Jane Doe',
        email: 'jane@example.com',
        source: 'zillow',
        tags: ['a'],
        propertyInterests: [{ listingId: 'lst_1', note: 'corner lot' }],
      });
      tick(60_000);
      const again = await capture({
        name: 'J. Doe',
        email: ' JANE@example.com',
        source: 'website',
        message: 'Second question',
        tags: ['b'],
        propertyInterests: [{ listingId: 'lst_1' }, { listingId: 'lst_2' }],
      });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({
        id: first.id,
        duplicate: true,
        name: 'Jane Doe',
        source: 'zillow',
        tags: ['a', 'b'],
        propertyInterests: [
          { listingId: 'lst_1', note: 'corner lot' },
          { listingId: 'lst_2', note: null },
        ],
        lastActivityAt: now.toISOString(),
      });
      const inquiries = (await timeline(first.id)).filter((a) => a.type === 'inquiry');
      expect(inquiries.map((a) => a.summary)).toEqual(['Second question', 'Inquiry via zillow']);
      expect(inquiries[0].data).toEqual({ source: 'website', duplicate: true, listingIds: ['lst_1', 'lst_2'] });
      expect((await search('')).json().total).toBe(1);
    });

    it('matches by phone however it is written, and fills in a missing email', async () => {
      const first = await created({ name: 'Sam Lee', phone: '512-555-0199' });
      for (const phone of ['+1 (512) 555 0199', '5125550199', '1.512.555.0199']) {
        const res = await capture({ name: 'Sam', phone });
        expect({ phone, status: res.statusCode, id: res.json().id, duplicate: res.json().duplicate }).toEqual({
          phone,
          status: 200,
          id: first.id,
          duplicate: true,
        });
      }
      const withEmail = await capture({ name: 'Sam', phone: '(512) 555-0199', email: 'sam@example.com' });
      expect(withEmail.json()).toMatchObject({ id: first.id, email: 'sam@example.com', phone: '+15125550199' });
      expect((await capture({ name: 'Sam', email: 'SAM@example.com' })).json().id).toBe(first.id);
      expect((await search('')).json().total).toBe(1);
    });

    it("keeps two people apart: a capture with one lead's email and another's phone joins the first and leaves the phone with the second", async () => {
      const a = await created({ name: 'A', email: 'a@example.com' });
      const b = await created({ name: 'B', phone: '+1 512 555 0111' });
      const res = await capture({ name: 'A', email: 'a@example.com', phone: '512 555 0111' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: a.id, phone: null });
      expect((await get(b.id)).json().phone).toBe('+15125550111');
    });

    it('captures the same person sent many times at once as one lead', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => capture({ name: 'Rush', email: 'rush@example.com', message: `try ${i}` })),
      );
      expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1);
      expect(results.filter((r) => r.statusCode === 200)).toHaveLength(11);
      expect(new Set(results.map((r) => r.json().id)).size).toBe(1);
      expect((await search('')).json().total).toBe(1);
      expect((await timeline(results[0].json().id)).filter((a) => a.type === 'inquiry')).toHaveLength(12);
    });

    it('keeps accounts apart: the same email in another account is another lead', async () => {
      const mine = await created({ name: 'Jane', email: 'jane@example.com' });
      const theirs = await capture({ name: 'Jane', email: 'jane@example.com' }, otherAccount);
      expect(theirs.statusCode).toBe(201);
      expect(theirs.json().id).not.toBe(mine.id);
      expect((await get(mine.id, otherAccount)).statusCode).toBe(404);
    });

    it('refuses bad input with every path, and stores nothing', async () => {
      const cases: [Body, string[]][] = [
        [{ email: 'x@example.com' }, ['name']],
        [{ name: 'No contact' }, ['email']],
        [{ name: 'Bad', email: 'not-an-email' }, ['email']],
        [{ name: 'Bad', phone: '12' }, ['phone']],
        [
          { name: 'Bad', email: 'x@example.com', score: 50, status: 'qualified', colour: 'red' },
          ['colour', 'score', 'status'],
        ],
        [
          { name: 'Bad', email: 'x@example.com', propertyInterests: [{ note: 'no id' }] },
          ['propertyInterests.0.listingId'],
        ],
      ];
      for (const [body, paths] of cases) {
        const res = await capture(body);
        expect({
          body,
          status: res.statusCode,
          code: res.json().code,
          paths: res
            .json()
            .errors?.map((e: { path: string }) => e.path)
            .sort(),
        }).toEqual({ body, status: 422, code: 'validation_failed', paths });
      }
      expect((await search('')).json().total).toBe(0);
    });

    it('lets integrations capture but not read or search; agents may not capture', async () => {
      const res = await capture({ name: 'From the website', email: 'web@example.com' }, integration);
      expect(res.statusCode).toBe(201);
      expect((await search('', integration)).statusCode).toBe(403);
      expect((await get(res.json().id, integration)).statusCode).toBe(403);
      expect((await capture({ name: 'x', email: 'y@example.com' }, agentKey('agt_1'))).statusCode).toBe(403);
    });
  });

  describe('reading', () => {
    it('resolves property interests to listing summaries from listing and media events (newer versions only), unknown ones to null', async () => {
      await publishListing(h.bus, 'acc_alice', listing('lst_a', { listPrice: 500000 }));
      await publishListing(h.bus, 'acc_bob', listing('lst_b'));
      const lead = await created({
        name: 'Ann',
        email: 'ann@example.com',
        propertyInterests: [{ listingId: 'lst_a' }, { listingId: 'lst_b' }, { listingId: 'lst_unknown' }],
      });
      const read = (await get(lead.id)).json() as Lead;
      expect(read.propertyInterests).toEqual([
        {
          listingId: 'lst_a',
          note: null,
          listing: {
            id: 'lst_a',
            status: 'active',
            propertyType: 'residential',
            price: { listPrice: 500000, currency: 'USD' },
            address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701', country: 'US' },
            primaryPhoto: null,
            updatedAt: '2025-01-01T00:00:00.000Z',
          },
        },
        // Another account's listing is as unknown as a missing one.
        { listingId: 'lst_b', note: null, listing: null },
        { listingId: 'lst_unknown', note: null, listing: null },
      ]);
      await publishListing(
        h.bus,
        'acc_alice',
        listing('lst_a', { listPrice: 480000, status: 'pending', version: 3 }),
        'listings.listing.updated',
      );
      await publishListing(
        h.bus,
        'acc_alice',
        listing('lst_a', { listPrice: 1, version: 2 }),
        'listings.listing.updated',
      );
      const urls = { original: '/files/o', large: '/files/l', thumb: '/files/t' };
      await h.bus.publish('media.media.changed', {
        eventId: 'm1',
        accountId: 'acc_alice',
        listingId: 'lst_a',
        version: 4,
        occurredAt: now.toISOString(),
        change: 'uploaded',
        mediaIds: ['med_1'],
        summary: { photoCount: 1, primaryPhoto: { id: 'med_1', urls }, virtualTours: [] },
      } as never);
      expect((await get(lead.id)).json().propertyInterests[0].listing).toMatchObject({
        status: 'pending',
        price: { listPrice: 480000 },
        primaryPhoto: { id: 'med_1', urls },
      });
      await h.bus.publish('listings.listing.deleted', {
        eventId: 'd1',
        accountId: 'acc_alice',
        listingId: 'lst_a',
        version: 5,
        occurredAt: now.toISOString(),
      });
      await publishListing(h.bus, 'acc_alice', listing('lst_a', { version: 4 }), 'listings.listing.updated');
      expect((await get(lead.id)).json().propertyInterests[0].listing).toBeNull();
    });

    it('answers 404 for a lead that does not exist', async () => {
      const res = await get('lead_nope');
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'lead_not_found', requestId: res.headers['x-request-id'] });
    });
  });

  describe('pipeline search', () => {
    let leads: Record<string, Lead>;

    beforeEach(async () => {
      await publishListing(h.bus, 'acc_alice', listing('lst_x'));
      leads = {};
      const people: [string, Body][] = [
        [
          'ann',
          {
            name: 'Ann Archer',
            email: 'ann@example.com',
            source: 'Zillow',
            propertyInterests: [{ listingId: 'lst_x' }],
          },
        ],
        ['bob', { name: 'Bob Baker', phone: '+1 512 555 0142', source: 'website' }],
        ['cy', { name: 'Cy Carter', email: 'cy@corp.example.org', phone: '+44 20 7946 0958', source: 'referral' }],
        ['dee', { name: 'Dée Dawson', email: 'dee@example.com', source: 'zillow' }],
      ];
      for (const [key, body] of people) {
        leads[key] = await created(body);
        tick(24 * 3600_000);
      }
      await patch(leads.bob.id, { status: 'contacted' });
      await patch(leads.cy.id, { score: 95 });
    });

    it('filters by status (one or many), source, listing, score and dates (inclusive, a bare date is the whole day)', async () => {
      expect(ids(await search('?status=contacted'))).toEqual([leads.bob.id]);
      expect(ids(await search('?status=new,contacted&sort=createdAt'))).toEqual([
        leads.ann.id,
        leads.bob.id,
        leads.cy.id,
        leads.dee.id,
      ]);
      expect(ids(await search('?status=new&status=contacted&sort=createdAt'))).toHaveLength(4);
      expect(ids(await search('?source=Zillow&sort=createdAt'))).toEqual([leads.ann.id, leads.dee.id]);
      expect(ids(await search('?listingId=lst_x'))).toEqual([leads.ann.id]);
      expect(ids(await search('?minScore=95'))).toEqual([leads.cy.id]);
      expect(ids(await search(`?maxScore=${leads.dee.score}&minScore=${leads.dee.score}`))).toContain(leads.dee.id);
      expect(ids(await search('?createdFrom=2025-03-11&createdTo=2025-03-12&sort=createdAt'))).toEqual([
        leads.bob.id,
        leads.cy.id,
      ]);
      expect(ids(await search(`?createdFrom=${encodeURIComponent(leads.cy.createdAt)}&sort=createdAt`))).toEqual([
        leads.cy.id,
        leads.dee.id,
      ]);
      // Bob's status change just now is activity; Cy's manual score is not.
      expect(ids(await search(`?activityFrom=${encodeURIComponent(now.toISOString())}`))).toEqual([leads.bob.id]);
    });

    it('filters by activity time, agent and unassigned', async () => {
      now = new Date('2025-03-20T10:00:00.000Z');
      await h.call(admin, 'POST', `/v1/leads/${leads.ann.id}/activities`, { type: 'call' });
      expect(ids(await search('?activityFrom=2025-03-20&activityTo=2025-03-20'))).toEqual([leads.ann.id]);
      expect(ids(await search('?activityTo=2025-03-12'))).toEqual([leads.cy.id]);
      expect(ids(await search('?activityFrom=2025-03-13&activityTo=2025-03-14T12:00:00Z&sort=createdAt'))).toEqual([
        leads.bob.id,
        leads.dee.id,
      ]);
      expect((await search('?agentId=unassigned')).json().total).toBe(4);
      expect((await search('?agentId=agt_nobody')).json().total).toBe(0);
    });

    it('finds by the start of a name, email or phone (accents folded, every word must match)', async () => {
      expect(ids(await search('?q=ann'))).toEqual([leads.ann.id]);
      expect(ids(await search('?q=BAK'))).toEqual([leads.bob.id]);
      expect(ids(await search('?q=dee%20daw'))).toEqual([leads.dee.id]);
      expect(ids(await search('?q=cy%40corp'))).toEqual([leads.cy.id]);
      expect(ids(await search('?q=(512)%20555'))).toEqual([leads.bob.id]);
      expect(ids(await search('?q=%2B44%2020'))).toEqual([leads.cy.id]);
      expect(ids(await search('?q=example.com'))).toEqual([leads.dee.id, leads.ann.id]);
      expect(ids(await search('?q=corp.example'))).toEqual([leads.cy.id]);
      expect(ids(await search('?q=mple'))).toEqual([]);
      expect(ids(await search('?q=ann%20baker'))).toEqual([]);
    });

    it('sorts by score, createdAt and lastActivityAt and pages through every lead exactly once', async () => {
      const byScore = (await search('?sort=-score&limit=100')).json().items as Lead[];
      expect(byScore.map((l) => l.score)).toEqual([...byScore.map((l) => l.score)].sort((a, b) => b - a));
      expect(byScore[0].id).toBe(leads.cy.id);
      expect(ids(await search('?sort=createdAt'))).toEqual([leads.ann.id, leads.bob.id, leads.cy.id, leads.dee.id]);
      expect(ids(await search(''))).toEqual([leads.dee.id, leads.cy.id, leads.bob.id, leads.ann.id]);
      tick(1000);
      await h.call(admin, 'POST', `/v1/leads/${leads.ann.id}/activities`, { type: 'note', summary: 'called back' });
      expect(ids(await search('?sort=-lastActivityAt'))[0]).toBe(leads.ann.id);
      for (const sort of ['score', '-score', 'lastActivityAt', '-createdAt']) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: { items: Lead[]; total: number; nextCursor: string | null } = (
            await search(`?limit=3&sort=${sort}${cursor ? `&cursor=${cursor}` : ''}`)
          ).json();
          expect(page.total).toBe(4);
          seen.push(...page.items.map((l) => l.id));
          cursor = page.nextCursor;
        } while (cursor);
        expect({ sort, seen: [...seen].sort() }).toEqual({
          sort,
          seen: Object.values(leads)
            .map((l) => l.id)
            .sort(),
        });
      }
    });

    it("includes each lead's latest activities and resolved interests in the results", async () => {
      const ann = (await search('?listingId=lst_x')).json().items[0] as Lead;
      expect(ann.propertyInterests[0].listing).toMatchObject({ id: 'lst_x', status: 'active' });
      expect(ann.latestActivities[0]).toMatchObject({ type: 'inquiry' });
    });

    it('refuses bad parameters: 422 with the path, an undecodable cursor 400', async () => {
      for (const url of [
        '?limit=0',
        '?limit=101',
        '?sort=name',
        '?status=won',
        '?minScore=101',
        '?minScore=50&maxScore=10',
        '?createdFrom=yesterday',
        '?createdFrom=2025-03-12&createdTo=2025-03-11',
        '?colour=red',
      ]) {
        const res = await search(url);
        expect({ url, status: res.statusCode, code: res.json().code }).toEqual({
          url,
          status: 422,
          code: 'validation_failed',
        });
      }
      const res = await search('?cursor=garbage');
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('invalid_cursor');
    });
  });

  describe('updates', () => {
    it('applies a merge patch to contact fields and tags, with ETag and If-Match', async () => {
      const lead = await created({ name: 'Pat', email: 'pat@example.com', tags: ['x'] });
      const res = await patch(
        lead.id,
        { name: 'Pat Smith', phone: '512 555 0123', tags: ['vip', 'vip', 'buyer'] },
        admin,
        { 'if-match': '"1"' },
      );
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        name: 'Pat Smith',
        email: 'pat@example.com',
        phone: '+15125550123',
        tags: ['vip', 'buyer'],
        version: 2,
      });
      expect(res.headers.etag).toBe('"2"');
      const stale = await patch(lead.id, { name: 'Late' }, admin, { 'if-match': '"1"' });
      expect(stale.statusCode).toBe(412);
      expect(stale.json().code).toBe('version_mismatch');
      const cleared = await patch(lead.id, { email: null, tags: null });
      expect(cleared.json()).toMatchObject({ email: null, phone: '+15125550123', tags: [] });
      const noContact = await patch(lead.id, { phone: null });
      expect(noContact.statusCode).toBe(422);
      expect(noContact.json().errors[0].path).toBe('email');
      for (const body of [
        { source: 'x' },
        { score: 101 },
        { version: 9 },
        { status: 'won' },
        { phone: 'nope' },
        { name: null },
      ]) {
        expect({ body, status: (await patch(lead.id, body)).statusCode }).toEqual({ body, status: 422 });
      }
      expect((await get(lead.id)).json().name).toBe('Pat Smith');
      await h.runtime.relay.flush();
      const updated = h.events.filter((e) => e.subject === 'leads.lead.updated');
      expect(updated.map((e) => (e.payload as { changes: string[] }).changes)).toEqual([
        ['name', 'phone', 'tags'],
        ['email', 'tags'],
      ]);
    });

    it('changes nothing (same version) when a patch repeats what is there', async () => {
      const lead = await created({ name: 'Same', email: 'same@example.com' });
      const res = await patch(lead.id, { name: 'Same', status: 'new' });
      expect(res.statusCode).toBe(200);
      expect(res.json().version).toBe(1);
    });

    it("refuses taking another lead's email (409 lead_exists)", async () => {
      const a = await created({ name: 'A', email: 'a@example.com' });
      const b = await created({ name: 'B', email: 'b@example.com' });
      const res = await patch(b.id, { email: 'A@example.com' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'lead_exists', existingId: a.id });
    });

    it('moves through the pipeline, recording each change as a status_change activity', async () => {
      const lead = await created({ name: 'Walk', email: 'walk@example.com' });
      const path: LeadStatus[] = [
        'contacted',
        'qualified',
        'showing',
        'offer',
        'qualified',
        'offer',
        'under_contract',
        'closed_won',
      ];
      for (const status of path) expect((await patch(lead.id, { status })).json().status).toBe(status);
      const changes = (await timeline(lead.id))
        .filter((a) => a.type === 'status_change')
        .map((a) => a.data)
        .reverse();
      expect(changes).toEqual(path.map((to, i) => ({ from: i === 0 ? 'new' : path[i - 1], to })));
      const nurtured = await created({ name: 'Later', email: 'later@example.com' });
      for (const status of ['nurture', 'closed_lost', 'contacted', 'nurture', 'qualified'] as const)
        expect((await patch(nurtured.id, { status })).statusCode).toBe(200);
    });

    it('refuses every move the pipeline does not allow (422 invalid_transition naming both states), changing nothing', async () => {
      const routeTo: Record<LeadStatus, LeadStatus[]> = {
        new: [],
        contacted: ['contacted'],
        qualified: ['qualified'],
        showing: ['showing'],
        offer: ['offer'],
        under_contract: ['under_contract'],
        closed_won: ['offer', 'closed_won'],
        closed_lost: ['closed_lost'],
        nurture: ['nurture'],
      };
      const refused = leadStatuses.flatMap((from) =>
        leadStatuses.filter((to) => to !== from && !canTransition(from, to)).map((to) => [from, to] as const),
      );
      expect(refused).toHaveLength(21);
      let n = 0;
      for (const [from, to] of refused) {
        const lead = await created({ name: `T${n}`, email: `t${n++}@example.com` });
        for (const step of routeTo[from]) expect((await patch(lead.id, { status: step })).statusCode).toBe(200);
        const res = await patch(lead.id, { status: to });
        expect({ from, to, status: res.statusCode, code: res.json().code }).toEqual({
          from,
          to,
          status: 422,
          code: 'invalid_transition',
        });
        expect(res.json().detail).toContain(`from ${from} to ${to}`);
        expect(res.json()).toMatchObject({ from, to });
        expect((await get(lead.id)).json().status).toBe(from);
      }
    });

    it('keeps a manual score until it is set to null, while the engine keeps explaining its own', async () => {
      const lead = await created({ name: 'Manual', email: 'manual@example.com' });
      const manual = (await patch(lead.id, { score: 90 })).json() as Lead;
      expect(manual).toMatchObject({ score: 90, scoreSource: 'manual' });
      for (let i = 0; i < 3; i++) await h.call(admin, 'POST', `/v1/leads/${lead.id}/activities`, { type: 'call' });
      const after = (await get(lead.id)).json() as Lead;
      expect(after).toMatchObject({ score: 90, scoreSource: 'manual' });
      expect(after.scoreBreakdown.engineScore).toBeGreaterThan(lead.score);
      expect(pointsOf(after)).toBe(after.scoreBreakdown.engineScore);
      const back = (await patch(lead.id, { score: null })).json() as Lead;
      expect(back).toMatchObject({ scoreSource: 'engine', score: after.scoreBreakdown.engineScore });
      const changes = (await timeline(lead.id))
        .filter((a) => a.type === 'score_change')
        .map((a) => a.data)
        .reverse();
      expect(changes).toEqual([
        { from: lead.score, to: 90, scoreSource: 'manual' },
        { from: 90, to: back.score, scoreSource: 'engine' },
      ]);
    });

    it('moves the score with engagement, and the breakdown adds up at every step', async () => {
      const lead = await created({ name: 'Eager', email: 'eager@example.com', source: 'referral' });
      let previous = lead.score;
      for (const type of ['email', 'call', 'property_view', 'form_submission']) {
        const res = await h.call(admin, 'POST', `/v1/leads/${lead.id}/activities`, { type });
        expect(res.statusCode).toBe(201);
        const now = (await get(lead.id)).json() as Lead;
        expect(now.score).toBeGreaterThan(previous);
        expect(pointsOf(now)).toBe(now.score);
        previous = now.score;
      }
      await h.runtime.relay.flush();
      expect(h.events.filter((e) => e.subject === 'leads.lead.scored')).toHaveLength(4);
      // Weeks of silence: recency decays on the next change.
      tick(28 * 86_400_000);
      const later = (await patch(lead.id, { tags: ['cold'] })).json() as Lead;
      expect(later.score).toBeLessThan(previous);
      expect(later.scoreBreakdown.components.recency.detail).toBe('last engagement 28 days ago, half-life 14 days');
    });
  });

  it('documents every leads endpoint in its OpenAPI document', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json().paths).sort()).toEqual([
      '/v1/agents',
      '/v1/agents/{id}',
      '/v1/leads',
      '/v1/leads/{id}',
      '/v1/leads/{id}/activities',
      '/v1/leads/{id}/route',
      '/v1/routing/preview',
      '/v1/routing/rules',
      '/v1/routing/rules/{id}',
      '/v1/routing/settings',
      '/v1/scoring/config',
    ]);
  });

  describe('who sees what', () => {
    it('an agent reads, changes and finds only its own leads; others are 404 everywhere; it cannot reassign', async () => {
      const a1 = (await h.call(admin, 'POST', '/v1/agents', { name: 'One', email: 'one@example.com' })).json().id;
      const a2 = (await h.call(admin, 'POST', '/v1/agents', { name: 'Two', email: 'two@example.com' })).json().id;
      const mine = await created({ name: 'Mine', email: 'mine@example.com' });
      const theirs = await created({ name: 'Theirs', email: 'theirs@example.com' });
      const nobody = await created({ name: 'Nobody', email: 'nobody@example.com' });
      expect((await patch(mine.id, { agentId: a1 })).json()).toMatchObject({
        agentId: a1,
        assignment: { strategy: 'manual', ruleId: null },
      });
      await patch(theirs.id, { agentId: a2 });
      const me = agentKey(a1);

      expect((await get(mine.id, me)).statusCode).toBe(200);
      for (const id of [theirs.id, nobody.id]) {
        expect((await get(id, me)).statusCode).toBe(404);
        expect((await patch(id, { status: 'contacted' }, me)).statusCode).toBe(404);
        expect((await h.call(me, 'GET', `/v1/leads/${id}/activities`)).statusCode).toBe(404);
        expect((await h.call(me, 'POST', `/v1/leads/${id}/activities`, { type: 'call' })).statusCode).toBe(404);
      }
      expect(ids(await search('', me))).toEqual([mine.id]);
      expect((await search(`?agentId=${a2}`, me)).json().total).toBe(0);
      expect((await search('?agentId=unassigned', me)).json().total).toBe(0);
      expect((await search('?q=theirs', me)).json().total).toBe(0);

      expect((await patch(mine.id, { status: 'contacted', tags: ['hot'] }, me)).json()).toMatchObject({
        status: 'contacted',
        tags: ['hot'],
      });
      const reassign = await patch(mine.id, { agentId: a2 }, me);
      expect(reassign.statusCode).toBe(403);
      expect((await patch(mine.id, { agentId: null }, me)).statusCode).toBe(403);
      expect((await get(mine.id)).json().agentId).toBe(a1);
      expect((await h.call(me, 'POST', `/v1/leads/${mine.id}/route`)).statusCode).toBe(403);

      // The admin reassigns: the new agent sees it, the old one no longer does.
      expect((await patch(mine.id, { agentId: a2 })).statusCode).toBe(200);
      expect((await get(mine.id, me)).statusCode).toBe(404);
      expect((await get(mine.id, agentKey(a2))).statusCode).toBe(200);
      await h.runtime.relay.flush();
      expect(
        h.events
          .filter((e) => e.subject === 'leads.lead.assigned')
          .map((e) => [
            (e.payload as { previousAgentId: string }).previousAgentId,
            (e.payload as { agentId: string }).agentId,
          ]),
      ).toEqual([
        [null, a1],
        [null, a2],
        [a1, a2],
      ]);
      expect((await patch(mine.id, { agentId: 'agt_ghost' })).json().errors[0]).toMatchObject({ path: 'agentId' });
    });

    it('another account sees none of it', async () => {
      const lead = await created({ name: 'Private', email: 'private@example.com' });
      expect((await get(lead.id, otherAccount)).statusCode).toBe(404);
      expect((await patch(lead.id, { status: 'contacted' }, otherAccount)).statusCode).toBe(404);
      expect((await search('', otherAccount)).json().total).toBe(0);
      expect((await search('')).json().total).toBe(1);
    });
  });
});

describe('a capture naming a listing whose event has not reached leads yet', () => {
  let h: LeadsHarness;
  afterEach(async () => h.close());

  it("asks the listings service as the caller, records what it answers, and the lead's interest and score show it", async () => {
    const asked: string[] = [];
    h = await startLeads({
      listings: {
        find: async (who, listingId) => {
          asked.push(`${who.accountId}/${who.role}/${listingId}`);
          return who.accountId === 'acc_alice' && listingId === 'lst_new' ? listing('lst_new', { version: 2 }) : null;
        },
      },
    });
    const res = await h.call(admin, 'POST', '/v1/leads', {
      name: 'Ann',
      email: 'ann@example.com',
      propertyInterests: [{ listingId: 'lst_new' }, { listingId: 'lst_nowhere' }],
    });
    expect(res.statusCode).toBe(201);
    const lead = res.json() as Lead;
    expect(lead.propertyInterests).toEqual([
      { listingId: 'lst_new', note: null, listing: expect.objectContaining({ id: 'lst_new', status: 'active' }) },
      { listingId: 'lst_nowhere', note: null, listing: null },
    ]);
    // The active listing counts in the score at capture, as it does once the event has arrived.
    expect(lead.scoreBreakdown.components.interest.points).toBeGreaterThan(0);
    expect(asked.sort()).toEqual(['acc_alice/admin/lst_new', 'acc_alice/admin/lst_nowhere']);

    // Recorded as the event would: asked no more, and an older event changes nothing.
    await publishListing(h.bus, 'acc_alice', listing('lst_new', { version: 1, status: 'closed' }));
    const again = await h.call(integration, 'POST', '/v1/leads', {
      name: 'Bo',
      email: 'bo@example.com',
      propertyInterests: [{ listingId: 'lst_new' }],
    });
    expect(again.statusCode).toBe(201);
    expect(asked.filter((a) => a.endsWith('/lst_new'))).toHaveLength(1);
    const read = (await h.call(admin, 'GET', `/v1/leads/${again.json().id}`)).json() as Lead;
    expect(read.propertyInterests[0].listing).toMatchObject({ id: 'lst_new', status: 'active' });
  });

  it('captures the lead when the listings service cannot answer; the listing event fills the interest in later', async () => {
    h = await startLeads({
      listings: {
        find: async () => {
          throw new Error('connection refused');
        },
      },
    });
    const res = await h.call(admin, 'POST', '/v1/leads', {
      name: 'Cy',
      email: 'cy@example.com',
      propertyInterests: [{ listingId: 'lst_late' }],
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().propertyInterests[0].listing).toBeNull();
    await publishListing(h.bus, 'acc_alice', listing('lst_late'));
    const read = (await h.call(admin, 'GET', `/v1/leads/${res.json().id}`)).json() as Lead;
    expect(read.propertyInterests[0].listing).toMatchObject({ id: 'lst_late' });
  });
});
