import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { examples } from '@estate/contracts/examples';
import { eventually } from '@estate/testing';
import sharp from 'sharp';
import { ADMIN, expectProblem, startTarget, type Target } from './harness';

async function tinyJpeg(): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const jpeg = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#3a6' } })
    .jpeg()
    .toBuffer();
  const form = new FormData();
  form.append('file', new Blob([jpeg], { type: 'image/jpeg' }), 'photo.jpg');
  const encoded = new Response(form);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

/** A problem answer with the ids it names blanked, to compare two refusals. */
const shapeOf = (body: Record<string, unknown>, ...ids: string[]) => {
  let text = JSON.stringify({ ...body, requestId: undefined });
  for (const id of ids) text = text.split(id).join('<id>');
  return JSON.parse(text);
};

/** Listens on loopback; answers every request with `answer`, and counts what it got. */
async function listen(
  answer: (res: import('node:http').ServerResponse) => void,
): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

describe('OWASP API Security Top 10 (2023), as an attacker tries it', () => {
  let t: Target;
  afterEach(() => t.close());

  describe('with webhooks allowed to reach this machine', () => {
    beforeEach(async () => {
      t = await startTarget({ webhooks: { allowPrivateTargets: true, retryScheduleMs: [60_000] } });
    });

    it("API1 BOLA: another account's ids on every resource type answer 404 like unknown ids, and nothing changes", async () => {
      // The victim (the default account) owns one of everything.
      const listing = await t.listing(ADMIN);
      const upload = await tinyJpeg();
      const media = await t.call(ADMIN, 'POST', `/v1/listings/${listing.id}/media`, upload.payload, upload.headers);
      expect(media.statusCode).toBe(201);
      const mediaId = media.json().items[0].id;
      const job = await t.call(ADMIN, 'POST', '/v1/listings/bulk', examples.bulkListingsRequest);
      expect(job.statusCode).toBe(202);
      const jobId = job.json().jobId;
      const agent = await t.agent(ADMIN);
      const lead = await t.lead(ADMIN);
      const rule = await t.call(ADMIN, 'POST', '/v1/routing/rules', {
        name: 'Victim rule',
        priority: 1,
        strategy: 'round_robin',
        agentIds: [agent.id],
      });
      expect(rule.statusCode).toBe(201);
      const ruleId = rule.json().id;
      const hook = await t.call(ADMIN, 'POST', '/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        events: ['lead.created'],
      });
      expect(hook.statusCode).toBe(201);
      const hookId = hook.json().id;
      const delivery = await t.call(ADMIN, 'POST', `/v1/webhooks/${hookId}/test`);
      expect(delivery.statusCode).toBe(202);
      const deliveryId = delivery.json().id;
      const key = await t.key(ADMIN, 'integration');

      const snapshot = async () => ({
        listing: (await t.call(ADMIN, 'GET', `/v1/listings/${listing.id}`)).json(),
        media: (await t.call(ADMIN, 'GET', `/v1/listings/${listing.id}/media/${mediaId}`)).json(),
        lead: (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}`)).json(),
        activities: (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}/activities`)).json().total,
        agent: (await t.call(ADMIN, 'GET', `/v1/agents/${agent.id}`)).json(),
        rule: (await t.call(ADMIN, 'GET', `/v1/routing/rules/${ruleId}`)).json(),
        hook: (await t.call(ADMIN, 'GET', `/v1/webhooks/${hookId}`)).json(),
        keys: (await t.call(ADMIN, 'GET', '/v1/api-keys')).json(),
      });
      await eventually(async () => {
        const state = await snapshot();
        expect(state.media.status).not.toBe('processing');
        expect(state.listing.media.photoCount).toBe(1);
      });
      const before = await snapshot();

      const rival = await t.newAccount();
      const rivalAgent = await t.agent(rival.admin);
      const attempts: [string, string, unknown?][] = [
        ['GET', `/v1/listings/${listing.id}`],
        ['PATCH', `/v1/listings/${listing.id}`, { pricing: { listPrice: 1 } }],
        ['DELETE', `/v1/listings/${listing.id}`],
        ['GET', `/v1/listings/${listing.id}/media`],
        ['POST', `/v1/listings/${listing.id}/media`, { type: 'virtual_tour', url: 'https://evil.example.com' }],
        ['GET', `/v1/listings/${listing.id}/media/${mediaId}`],
        ['PATCH', `/v1/listings/${listing.id}/media/${mediaId}`, { caption: 'pwned' }],
        ['DELETE', `/v1/listings/${listing.id}/media/${mediaId}`],
        ['PUT', `/v1/listings/${listing.id}/media/order`, { mediaIds: [mediaId] }],
        ['GET', `/v1/jobs/${jobId}`],
        ['GET', `/v1/jobs/${jobId}/events`],
        ['GET', `/v1/leads/${lead.id}`],
        ['PATCH', `/v1/leads/${lead.id}`, { status: 'contacted' }],
        ['POST', `/v1/leads/${lead.id}/route`],
        ['GET', `/v1/leads/${lead.id}/activities`],
        ['POST', `/v1/leads/${lead.id}/activities`, { type: 'note', summary: 'pwned' }],
        ['GET', `/v1/agents/${agent.id}`],
        ['PATCH', `/v1/agents/${agent.id}`, { active: false }],
        ['DELETE', `/v1/agents/${agent.id}`],
        ['GET', `/v1/routing/rules/${ruleId}`],
        ['PATCH', `/v1/routing/rules/${ruleId}`, { enabled: false }],
        ['DELETE', `/v1/routing/rules/${ruleId}`],
        ['GET', `/v1/webhooks/${hookId}`],
        ['PATCH', `/v1/webhooks/${hookId}`, { url: 'http://127.0.0.1:10/stolen' }],
        ['DELETE', `/v1/webhooks/${hookId}`],
        ['POST', `/v1/webhooks/${hookId}/rotate-secret`],
        ['POST', `/v1/webhooks/${hookId}/test`],
        ['GET', `/v1/webhooks/${hookId}/deliveries`],
        ['POST', `/v1/webhooks/${hookId}/deliveries/${deliveryId}/retry`],
        ['DELETE', `/v1/api-keys/${key.id}`],
      ];
      const swap = (url: string) =>
        [listing.id, mediaId, jobId, lead.id, agent.id, ruleId, hookId, deliveryId, key.id].reduce(
          (u, id) => u.split(id).join(`${id.slice(0, 4)}unknown0000000000000000`),
          url,
        );
      for (const [method, url, body] of attempts) {
        const foreign = await t.call(rival.admin, method as 'GET', url, body);
        const unknown = await t.call(rival.admin, method as 'GET', swap(url), body);
        expect({ method, url, status: foreign.statusCode }).toEqual({ method, url, status: 404 });
        expectProblem(foreign, 404);
        // Nothing tells a foreign id from one that does not exist.
        expect(foreign.json().code).toBe(unknown.json().code);
      }
      // Ids of the victim's inside the rival's own writes lead nowhere either.
      const rivalRule = await t.call(rival.admin, 'POST', '/v1/routing/rules', {
        name: 'Steal',
        priority: 0,
        strategy: 'round_robin',
        agentIds: [agent.id],
      });
      expect(rivalRule.statusCode).toBe(422);
      const rivalLead = await t.call(rival.admin, 'PATCH', `/v1/leads/${(await t.lead(rival.admin)).id}`, {
        agentId: agent.id,
      });
      expect([404, 422]).toContain(rivalLead.statusCode);
      expect(rivalAgent.id).not.toBe(agent.id);
      const rivalLists = await Promise.all(
        ['/v1/listings', '/v1/leads', '/v1/agents', '/v1/routing/rules', '/v1/webhooks', '/v1/events'].map(
          async (path) => (await t.call(rival.admin, 'GET', `${path}?limit=100`)).body,
        ),
      );
      for (const body of rivalLists)
        for (const id of [listing.id, mediaId, lead.id, agent.id, ruleId, hookId]) expect(body).not.toContain(id);

      expect(await snapshot()).toEqual(before);
    });

    it('media answers a foreign listing exactly as an unknown one, for reads and uploads', async () => {
      const listing = await t.listing(ADMIN);
      const rival = await t.newAccount();
      const unknownId = `${listing.id.slice(0, 4)}unknown000000000000000`;
      const upload = await tinyJpeg();
      for (const [method, suffix, body, headers] of [
        ['GET', '/media', undefined, undefined],
        ['POST', '/media', upload.payload, upload.headers],
        ['POST', '/media', { type: 'virtual_tour', url: 'https://tours.example.com/x' }, undefined],
      ] as const) {
        const foreign = await t.call(rival.admin, method, `/v1/listings/${listing.id}${suffix}`, body, headers);
        const unknown = await t.call(rival.admin, method, `/v1/listings/${unknownId}${suffix}`, body, headers);
        expect(foreign.statusCode).toBe(404);
        expect(unknown.statusCode).toBe(404);
        expect(shapeOf(foreign.json(), listing.id)).toEqual(shapeOf(unknown.json(), unknownId));
      }
      expect((await t.call(ADMIN, 'GET', `/v1/listings/${listing.id}/media`)).json().total).toBe(0);
    });

    it("API10 unsafe consumption: a webhook receiver's answer is never followed, reflected or trusted", async () => {
      const elsewhere = await listen((res) => res.writeHead(200).end('secret internal page'));
      const hostile = await listen((res) =>
        res
          .writeHead(302, { location: `${elsewhere.url}/latest/meta-data`, 'content-type': 'application/json' })
          .end('{"state":"succeeded","injected":"<script>alert(1)</script>"}'),
      );
      try {
        const hook = await t.call(ADMIN, 'POST', '/v1/webhooks', { url: `${hostile.url}/hook`, events: ['*'] });
        expect(hook.statusCode).toBe(201);
        const hookId = hook.json().id;
        expect((await t.call(ADMIN, 'POST', `/v1/webhooks/${hookId}/test`)).statusCode).toBe(202);
        const delivery = await eventually(async () => {
          const page = (await t.call(ADMIN, 'GET', `/v1/webhooks/${hookId}/deliveries`)).json();
          expect(page.items[0].attempts).toBeGreaterThan(0);
          return page.items[0];
        });
        expect(hostile.hits()).toBeGreaterThan(0);
        expect(elsewhere.hits()).toBe(0);
        expect(delivery.state).not.toBe('succeeded');
        expect(delivery.lastStatusCode).toBe(302);
        const everything = JSON.stringify([
          delivery,
          (await t.call(ADMIN, 'GET', `/v1/webhooks/${hookId}`)).json(),
          (await t.call(ADMIN, 'GET', '/v1/events?limit=100')).json(),
        ]);
        expect(everything).not.toMatch(/injected|<script>|internal page|meta-data/);
      } finally {
        hostile.server.close();
        elsewhere.server.close();
      }
    });
  });

  describe('as installed (webhooks reach public https targets only)', () => {
    beforeEach(async () => {
      t = await startTarget();
    });

    it('API7 SSRF: webhook targets on loopback, private, link-local, metadata or local names are refused, none is stored', async () => {
      const targets = [
        'http://example.com/hook',
        'https://127.0.0.1/hook',
        'https://127.1/hook',
        'https://2130706433/hook',
        'https://0x7f.0.0.1/hook',
        'https://0.0.0.0/hook',
        'https://localhost/hook',
        'https://api.localhost/hook',
        'https://10.0.0.1/hook',
        'https://172.16.0.1/hook',
        'https://192.168.1.1/hook',
        'https://100.64.0.1/hook',
        'https://169.254.169.254/latest/meta-data/',
        'https://metadata.google.internal/computeMetadata/v1/',
        'https://[::1]/hook',
        'https://[fe80::1]/hook',
        'https://[fd00::1]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'https://[::ffff:169.254.169.254]/hook',
        'https://[::127.0.0.1]:8443/x',
        'https://[0:0:0:0:0:0:7f00:1]/x',
        'https://[::ffff:0:127.0.0.1]/x',
        'https://[2002:7f00:1::]/x',
        'https://[2002:a9fe:a9fe::]/latest/meta-data/',
        'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x',
        'https://localhost./hook',
        'https://api.localhost./hook',
        'https://metadata.google.internal./computeMetadata/v1/',
        'https://user:pass@crm.example.com/hook',
        'file:///etc/passwd',
        'gopher://127.0.0.1:25/',
        'ftp://example.com/',
      ];
      for (const url of targets) {
        const res = await t.call(ADMIN, 'POST', '/v1/webhooks', { url, events: ['*'] });
        expect({ url, status: res.statusCode }).toEqual({ url, status: 422 });
        expect(res.json().errors.map((e: { path: string }) => e.path)).toContain('url');
      }
      expect((await t.call(ADMIN, 'GET', '/v1/webhooks')).json().items).toHaveLength(0);
    });

    it('API6 sensitive business flows: a capture of a known person cannot take over, rename or reroute the lead', async () => {
      const ana = await t.agent(ADMIN);
      await t.agent(ADMIN);
      const lead = await t.lead(ADMIN, { name: 'Real Name', email: 'real@example.com', phone: '+15125550111' });
      expect(
        (await t.call(ADMIN, 'PATCH', `/v1/leads/${lead.id}`, { agentId: ana.id, tags: ['vip'] })).statusCode,
      ).toBe(200);
      const before = (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}`)).json();
      const feed = await t.key(ADMIN, 'integration');
      const res = await t.call(feed.secret, 'POST', '/v1/leads', {
        name: 'Attacker Name',
        email: 'real@example.com',
        phone: '+15125550000',
        source: 'attacker',
        autoRoute: true,
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ id: lead.id, duplicate: true });
      const after = (await t.call(ADMIN, 'GET', `/v1/leads/${lead.id}`)).json();
      expect(after).toMatchObject({
        name: before.name,
        email: before.email,
        phone: before.phone,
        source: before.source,
        agentId: ana.id,
        tags: ['vip'],
        status: before.status,
      });
    });

    it('scoring config: a flood of source qualities or out-of-range values is refused, the config unchanged', async () => {
      const before = (await t.call(ADMIN, 'GET', '/v1/scoring/config')).json();
      const flood = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`source-${i}`, 0.5]));
      for (const sourceQuality of [flood, { zillow: 2 }, { zillow: -1 }, { ['x'.repeat(101)]: 0.5 }])
        expectProblem(
          await t.call(ADMIN, 'PUT', '/v1/scoring/config', { ...examples.scoringConfigPut, sourceQuality }),
          422,
          'validation_failed',
        );
      expect((await t.call(ADMIN, 'GET', '/v1/scoring/config')).json()).toEqual(before);
    });

    it('API8 security misconfiguration: every refusal is problem+json without internals, every answer has nosniff and a request id', async () => {
      const listing = await t.listing(ADMIN);
      const probes: [string | null, string, string, unknown?, Record<string, string>?][] = [
        [ADMIN, 'GET', '/v1/nothing-here'],
        [ADMIN, 'GET', '/wp-admin/'],
        [ADMIN, 'GET', '/v1/../../etc/passwd'],
        [ADMIN, 'TRACE' as 'GET', '/v1/listings'],
        [ADMIN, 'DELETE', '/v1/listings'],
        [ADMIN, 'POST', '/v1/listings', '{"a":', { 'content-type': 'application/json' }],
        [ADMIN, 'POST', '/v1/listings', '<listing/>', { 'content-type': 'application/xml' }],
        [ADMIN, 'POST', '/v1/listings', { pricing: { listPrice: 'NaN' } }],
        [ADMIN, 'GET', `/v1/listings/${'%00'.repeat(10)}`],
        [ADMIN, 'GET', `/v1/listings/${'x'.repeat(10_000)}`],
        [ADMIN, 'GET', '/v1/listings?limit=abc&sort=$where'],
        [ADMIN, 'PATCH', `/v1/listings/${listing.id}`, { status: 'active' }, { 'if-match': '"not-a-version"' }],
        [null, 'GET', '/v1/listings'],
      ];
      for (const [key, method, path, body, headers] of probes) {
        const res = await t.call(key, method as 'GET', path, body, headers);
        const url = path.slice(0, 60);
        expect({ url, method, status: res.statusCode >= 400 && res.statusCode < 500 }).toEqual({
          url,
          method,
          status: true,
        });
        expectProblem(res, res.statusCode);
        expect(res.json().code).toEqual(expect.any(String));
        expect({ url, method, nosniff: res.headers['x-content-type-options'] }).toEqual({
          url,
          method,
          nosniff: 'nosniff',
        });
        expect(res.headers['x-powered-by']).toBeUndefined();
        expect(res.body).not.toMatch(
          /\bat .+\(.+:\d+:\d+\)|node_modules|\/src\/|stack|SQLITE|sqlite_|Mongo|ZodError|TypeError|ReferenceError/,
        );
        if (res.statusCode === 405) expect(res.headers.allow).toEqual(expect.any(String));
      }
      for (const url of ['/health/live', '/openapi.json', '/v1/listings', `/v1/listings/${listing.id}`]) {
        const res = await t.call(ADMIN, 'GET', url);
        expect(res.statusCode).toBe(200);
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['x-request-id']).toEqual(expect.any(String));
      }
      // Headers too large are refused by the HTTP parser itself: problem+json all the same.
      await t.product.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (t.product.app.server.address() as AddressInfo).port;
      const big = await fetch(`http://127.0.0.1:${port}/v1/listings`, { headers: { 'x-padding': 'x'.repeat(70_000) } });
      expect(big.status).toBe(431);
      expect(big.headers.get('content-type')).toBe('application/problem+json');
      expect(big.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await big.json()).toMatchObject({ code: 'headers_too_large', requestId: big.headers.get('x-request-id') });
      expect((await t.call(ADMIN, 'GET', '/v1/listings')).json().total).toBe(1);
    });

    it('API9 improper inventory: every /v1 route the product serves is documented in /openapi.json, and nothing more', async () => {
      const served = new Set<string>();
      const stack: string[] = [];
      for (const line of t.product.app.printRoutes({ commonPrefix: false }).split('\n')) {
        const at = line.search(/[├└]── /);
        if (at < 0) continue;
        const depth = at / 4;
        const m = /── (\S+) \(([^)]*)\)/.exec(line);
        const segment = m ? m[1] : line.slice(at + 4).trim();
        stack.length = depth;
        stack.push(segment);
        if (!m) continue;
        const path = stack.join('').replace(/:(\w+)/g, '{$1}');
        if (!path.startsWith('/v1/')) continue;
        for (const method of m[2].split(', ')) if (method !== 'HEAD') served.add(`${method.toLowerCase()} ${path}`);
      }
      expect(served.size).toBeGreaterThan(30);
      const doc = (await t.call(null, 'GET', '/openapi.json')).json();
      const documented = new Set<string>();
      for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
        for (const method of Object.keys(item))
          if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) documented.add(`${method} ${path}`);
      expect([...served].filter((r) => !documented.has(r))).toEqual([]);
      expect([...documented].filter((r) => r.includes(' /v1/') && !served.has(r))).toEqual([]);
    });
  });
});
