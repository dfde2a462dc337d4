import { connect, type AddressInfo } from 'node:net';
import { listingBody } from '@estate/testing';
import sharp from 'sharp';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

/** A multipart body of image files, as a browser would send it. */
async function multipart(files: Buffer[]): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const form = new FormData();
  for (const f of files) form.append('file', new Blob([f], { type: 'image/jpeg' }), 'photo.jpg');
  const encoded = new Response(form);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

const nested = (depth: number): unknown => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = { d: value };
  return value;
};

/** A cursor as a client sees it: base64url of whatever the attacker wants the server to decode. */
const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('attacks through what a request carries', () => {
  let t: Target;
  beforeEach(async () => {
    t = await startTarget();
  });
  afterEach(() => t.close());

  const listingTotal = async () => (await t.call(ADMIN, 'GET', '/v1/listings')).json().total;

  it("an integration key capturing a known person's email or phone learns only { id, duplicate }, never the lead", async () => {
    const known = await t.call(ADMIN, 'POST', '/v1/leads', {
      name: 'Victim Person',
      email: 'victim@example.com',
      phone: '+15125550142',
      source: 'referral',
      message: 'private note about budget',
    });
    expect(known.statusCode).toBe(201);
    const feed = await t.key(ADMIN, 'integration');
    for (const probe of [
      { name: 'Probe', email: 'VICTIM@example.com', source: 'website' },
      { name: 'Probe', phone: '(512) 555-0142', source: 'website' },
    ]) {
      const res = await t.call(feed.secret, 'POST', '/v1/leads', probe);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ id: known.json().id, duplicate: true });
      expect(res.body).not.toMatch(/Victim|budget|referral|5550142/);
    }
    const fresh = await t.call(feed.secret, 'POST', '/v1/leads', {
      name: 'New',
      email: 'n@example.com',
      source: 'web',
    });
    expect(fresh.statusCode).toBe(201);
    expect(Object.keys(fresh.json()).sort()).toEqual(['duplicate', 'id']);
    // The probe changed none of the person's details, and the pipeline stays closed to the key.
    const after = (await t.call(ADMIN, 'GET', `/v1/leads/${known.json().id}`)).json();
    expect(after).toMatchObject({ name: 'Victim Person', email: 'victim@example.com', phone: '+15125550142' });
    expectProblem(await t.call(feed.secret, 'GET', `/v1/leads/${known.json().id}`), 403);
    expectProblem(await t.call(feed.secret, 'GET', '/v1/leads?q=victim'), 403);
  });

  it("forged cursors (operator injection, edited, unsigned) and another account's cursor are 400 invalid_cursor", async () => {
    await t.listing(ADMIN);
    await t.listing(ADMIN);
    const page = (await t.call(ADMIN, 'GET', '/v1/listings?limit=1')).json();
    expect(page.nextCursor).toEqual(expect.any(String));
    const rival = await t.newAccount();
    await t.listing(rival.admin);
    await t.listing(rival.admin);
    const theirs = (await t.call(rival.admin, 'GET', '/v1/listings?limit=1')).json().nextCursor;
    const edited = page.nextCursor.slice(0, -2) + (page.nextCursor.endsWith('AA') ? 'BB' : 'AA');
    const cursors = [
      forged({ v: { $ne: null } }),
      forged({ v: { $where: 'sleep(1000) || true' } }),
      forged({ v: { $regex: '.*' }, id: { $gt: '' } }),
      forged({ $where: 'this.accountId' }),
      '{"v":{"$ne":null}}',
      edited,
      'not-a-cursor',
      theirs,
    ];
    for (const cursor of cursors) {
      for (const path of ['/v1/listings', '/v1/leads', '/v1/agents']) {
        const res = await t.call(ADMIN, 'GET', `${path}?limit=1&cursor=${encodeURIComponent(cursor)}`);
        expect({ cursor, path, status: res.statusCode }).toEqual({ cursor, path, status: 400 });
        expectProblem(res, 400, 'invalid_cursor');
      }
    }
    // The genuine cursor still reads the account's own second page, and only that.
    const second = (await t.call(ADMIN, 'GET', `/v1/listings?limit=1&cursor=${page.nextCursor}`)).json();
    expect(second.items).toHaveLength(1);
    expect(second.items[0].id).not.toBe(page.items[0].id);
    expect(second.total).toBe(2);
    // The other account's cursor still serves that account.
    expect((await t.call(rival.admin, 'GET', `/v1/listings?limit=1&cursor=${theirs}`)).statusCode).toBe(200);
  });

  it('JSON nested deeper than 64 levels is 422 before any handler, and activity data deeper than 32 levels too', async () => {
    const deep = await t.call(ADMIN, 'POST', '/v1/listings', { ...listingBody(), extra: nested(200) });
    expectProblem(deep, 422, 'validation_failed');
    const bomb = '['.repeat(100_000) + ']'.repeat(100_000);
    expectProblem(
      await t.call(ADMIN, 'POST', '/v1/listings', bomb, { 'content-type': 'application/json' }),
      422,
      'validation_failed',
    );
    expect(await listingTotal()).toBe(0);

    const lead = await t.lead(ADMIN);
    const timeline = async () => (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}/activities`)).json().items.length;
    const before = await timeline();
    const activity = await t.call(ADMIN, 'POST', `/v1/leads/${lead.id}/activities`, {
      type: 'note',
      summary: 'deep',
      data: nested(40),
    });
    expectProblem(activity, 422, 'validation_failed');
    expect(await timeline()).toBe(before);
  });

  it('prototype pollution through __proto__ or constructor.prototype in a body is refused and pollutes nothing', async () => {
    for (const body of [
      '{"externalId":"P1","__proto__":{"role":"admin","polluted":true}}',
      '{"externalId":"P2","constructor":{"prototype":{"polluted":true}}}',
    ]) {
      const res = await t.call(ADMIN, 'POST', '/v1/listings', body, { 'content-type': 'application/json' });
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await listingTotal()).toBe(0);
  });

  it('a request whose body or headers trickle in is answered 408 and disconnected, and nothing is written', async () => {
    await t.product.close();
    t = await startTarget({ requestTimeoutMs: 500 }, t.dir);
    await t.product.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.product.app.server.address() as AddressInfo).port;
    const slow = (head: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', () => resolve(text));
        socket.write(head);
      });
    const body = JSON.stringify(listingBody({ externalId: 'SLOW-1' }));
    const stalledBody = await slow(
      `POST /v1/listings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
    );
    expect(stalledBody).toMatch(/^HTTP\/1\.1 408 /);
    expect(stalledBody).toMatch(/content-type: application\/problem\+json/i);
    expect(stalledBody).toContain('"code":"request_timeout"');
    const stalledHeaders = await slow(
      `GET /v1/listings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN}\r\nX-Slow: `,
    );
    expect(stalledHeaders === '' || /^HTTP\/1\.1 408 /.test(stalledHeaders)).toBe(true);
    expect(await listingTotal()).toBe(0);
  });

  it('API3 broken object property level authorization: read-only and unknown fields are refused 422, nothing is written', async () => {
    const listing = await t.listing(ADMIN);
    const readOnly = { id: 'lst_mine', accountId: 'acc_other', version: 99, createdAt: '2000-01-01T00:00:00Z' };
    for (const [field, value] of Object.entries({ ...readOnly, isAdmin: true })) {
      const created = await t.call(ADMIN, 'POST', '/v1/listings', { ...listingBody(), [field]: value });
      expectProblem(created, 422, 'validation_failed');
      expect(created.json().errors.map((e: { path: string }) => e.path)).toContain(field);
      expectProblem(await t.call(ADMIN, 'PATCH', `/v1/listings/${listing.id}`, { [field]: value }), 422);
    }
    const lead = await t.lead(ADMIN);
    // `score` may be patched (a manual score, by contract), never sent with a capture.
    for (const [field, value] of Object.entries({
      score: 100,
      accountId: 'acc_other',
      version: 7,
      id: 'led_x',
      scoreBreakdown: {},
      scoreSource: 'manual',
    })) {
      if (field !== 'score')
        expectProblem(
          await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { [field]: value }),
          422,
          'validation_failed',
        );
      const captured = await t.call(ADMIN, 'POST', '/v1/leads', {
        name: 'N',
        email: 'n2@example.com',
        source: 'w',
        [field]: value,
      });
      expectProblem(captured, 422, 'validation_failed');
    }
    const agent = await t.agent(ADMIN);
    expectProblem(await t.call(ADMIN, 'PATCH', `/v1/agents/${agent.id}`, { openLeads: -100 }), 422);
    expect(await listingTotal()).toBe(1);
    expect((await t.call(ADMIN, 'GET', `/v1/listings/${listing.id}`)).json().version).toBe(listing.version);
    expect((await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}`)).json()).toMatchObject({ id: lead.id, version: 1 });
    expect((await t.call(ADMIN, 'GET', '/v1/leads')).json().total).toBe(1);
    expect((await t.call(ADMIN, 'GET', `/v1/agents/${agent.id}`)).json()).toMatchObject({ openLeads: 0, version: 1 });
  });

  it("API3: an agent cannot read, change, annotate or take another agent's lead, nor reassign its own", async () => {
    const ana = await t.agent(ADMIN);
    const bo = await t.agent(ADMIN);
    const anaKey = await t.key(ADMIN, 'agent', ana.id);
    const bosLead = await t.lead(ADMIN, { name: 'Bo Client' });
    const anasLead = await t.lead(ADMIN, { name: 'Ana Client' });
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${bosLead.id}`, { agentId: bo.id })).statusCode).toBe(200);
    expect((await t.call(ADMIN, 'PATCH', `/v1/leads/${anasLead.id}`, { agentId: ana.id })).statusCode).toBe(200);
    const bosBefore = (await t.call(ADMIN, 'GET', `/v1/leads/${bosLead.id}`)).json();

    expectProblem(await t.call(anaKey.secret, 'GET', `/v1/leads/${bosLead.id}`), 404, 'lead_not_found');
    expectProblem(await t.call(anaKey.secret, 'PATCH', `/v1/leads/${bosLead.id}`, { status: 'contacted' }), 404);
    expectProblem(await t.call(anaKey.secret, 'PATCH', `/v1/leads/${bosLead.id}`, { agentId: ana.id }), 404);
    expectProblem(
      await t.call(anaKey.secret, 'POST', `/v1/leads/${bosLead.id}/activities`, { type: 'note', summary: 'mine now' }),
      404,
    );
    expectProblem(await t.call(anaKey.secret, 'GET', `/v1/leads/${bosLead.id}/activities`), 404);
    const listed = (await t.call(anaKey.secret, 'GET', `/v1/leads?agentId=${bo.id}`)).json();
    expect(listed.items.map((l: { id: string }) => l.id)).not.toContain(bosLead.id);
    const all = (await t.call(anaKey.secret, 'GET', '/v1/leads?q=Bo')).json();
    expect(all.items.map((l: { id: string }) => l.id)).not.toContain(bosLead.id);
    // Handing its own lead to another agent is refused too.
    const handOff = await t.call(anaKey.secret, 'PATCH', `/v1/leads/${anasLead.id}`, { agentId: bo.id });
    expect([403, 422]).toContain(handOff.statusCode);

    const bosAfter = (await t.call(ADMIN, 'GET', `/v1/leads/${bosLead.id}`)).json();
    expect(bosAfter).toEqual(bosBefore);
    expect((await t.call(ADMIN, 'GET', `/v1/leads/${anasLead.id}`)).json().agentId).toBe(ana.id);
  });

  it('API4 unrestricted resource consumption: oversized bodies, pages, bulks and uploads are refused, nothing is stored', async () => {
    const huge = JSON.stringify({ ...listingBody(), propertyDetails: { description: 'x'.repeat(5 * 1024 * 1024) } });
    expectProblem(
      await t.call(ADMIN, 'POST', '/v1/listings', huge, { 'content-type': 'application/json' }),
      413,
      'payload_too_large',
    );
    for (const path of ['/v1/listings', '/v1/leads', '/v1/agents', '/v1/webhooks', '/v1/events'])
      for (const limit of ['101', '0', '-1', '1e9', '100000000000000000000'])
        expectProblem(await t.call(ADMIN, 'GET', `${path}?limit=${limit}`), 422, 'validation_failed');
    const bulk = await t.call(ADMIN, 'POST', '/v1/listings/bulk', {
      listings: Array.from({ length: 101 }, (_, i) => ({ ...listingBody(), externalId: `B-${i}`, source: 'mls' })),
    });
    expectProblem(bulk, 422, 'bulk_limit_exceeded');
    expect(await listingTotal()).toBe(0);

    const listing = await t.listing(ADMIN);
    const media = async () => (await t.call(ADMIN, 'GET', `/v1/listings/${listing.id}/media?limit=100`)).json();
    const tiny = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#3a6' } })
      .jpeg()
      .toBuffer();
    // A real JPEG, padded past 10 MB: only its size is wrong.
    const tooBig = await multipart([Buffer.concat([tiny, Buffer.alloc(10 * 1024 * 1024, 0)])]);
    expectProblem(
      await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, tooBig.payload, tooBig.headers),
      413,
      'payload_too_large',
    );
    expect((await media()).items).toHaveLength(0);

    const fifty = await multipart(Array.from({ length: 50 }, () => tiny));
    expect(
      (await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, fifty.payload, fifty.headers)).statusCode,
    ).toBe(201);
    const one = await multipart([tiny]);
    expectProblem(
      await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, one.payload, one.headers),
      409,
      'media_limit_reached',
    );
    expect((await media()).items.filter((m: { kind: string }) => m.kind === 'image')).toHaveLength(50);
  });
});
