import { request } from 'node:http';
import { describeWithEngines, eventually, listingBody } from '@estate/testing';
import { apiClient, startCluster, type Cluster } from './harness';

/**
 * POSTs `body` as many HTTP clients do, writing all of it before reading the answer; the connection's error (EPIPE,
 * ECONNRESET) is reported rather than thrown.
 */
function postWhole(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status?: number; headers: Record<string, unknown>; body: string; error?: string }> {
  return new Promise((resolve) => {
    const out: { status?: number; headers: Record<string, unknown>; body: string; error?: string } = {
      headers: {},
      body: '',
    };
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': body.length } }, (res) => {
      out.status = res.statusCode;
      out.headers = res.headers;
      res.setEncoding('utf8').on('data', (chunk: string) => (out.body += chunk));
    });
    req.on('error', (err: NodeJS.ErrnoException) => (out.error = err.code ?? err.message));
    req.on('close', () => setImmediate(() => resolve(out)));
    req.end(body);
  });
}

/**
 * Tier 3: the four services as separate processes on the real engines, driven through the
 * gateway over HTTP, as a client would.
 */
describeWithEngines(
  'distributed profile (separate processes, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let run = '';
    let admin = '';
    let platform = '';
    let gateway = '';
    let listingsUrl = '';
    const api = (key: string | null) => apiClient(gateway, key);

    beforeAll(async () => {
      cluster = await startCluster({ name: 'sysdist', engines: urls });
      ({ run, gateway } = cluster);
      ({ admin, platform } = cluster.keys);
      listingsUrl = cluster.process('listings').url;
    }, 90_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    it('drives listings CRUD through the gateway', async () => {
      const created = await api(admin)(
        'POST',
        '/v1/listings',
        listingBody({ externalId: `E-${run}`, source: 'system' }),
      );
      expect(created.status).toBe(201);
      expect(created.headers.get('etag')).toBe('"1"');
      const id = created.body.id;
      expect((await api(admin)('GET', `/v1/listings/${id}`)).body).toEqual(created.body);
      const patched = await api(admin)(
        'PATCH',
        `/v1/listings/${id}`,
        { pricing: { listPrice: 475000 } },
        { 'if-match': '"1"' },
      );
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ version: 2, pricing: { listPrice: 475000 } });
      const stale = await api(admin)('PATCH', `/v1/listings/${id}`, { status: 'closed' }, { 'if-match': '"1"' });
      expect(stale.status).toBe(412);
      expect(stale.body.code).toBe('version_mismatch');
      // The list is served by the search index, a moment behind the write.
      await eventually(async () =>
        expect((await api(admin)('GET', '/v1/listings?limit=1')).body).toMatchObject({ total: 1, nextCursor: null }),
      );
      expect(await api(admin)('DELETE', `/v1/listings/${id}`)).toMatchObject({
        status: 200,
        body: { id, deleted: true },
      });
      expect((await api(admin)('GET', `/v1/listings/${id}`)).status).toBe(404);
    });

    it('answers problem+json for bad input, and stores nothing', async () => {
      // A fresh account, so that only this test's writes can show up in its listings.
      const fresh = (await api(platform)('POST', '/v1/accounts', { name: `Bad input ${run}` })).body.adminKey
        .secret as string;
      const bad = await api(fresh)('POST', '/v1/listings', { ...listingBody(), colour: 'red', version: 3 });
      expect(bad.status).toBe(422);
      expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['colour', 'version']);
      const malformed = await fetch(`${gateway}/v1/listings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fresh}`, 'content-type': 'application/json' },
        body: '{"x":',
      });
      expect(malformed.status).toBe(400);
      // A valid write made after the bad ones shows up alone once search has caught up.
      const good = await api(fresh)('POST', '/v1/listings', listingBody());
      await eventually(async () =>
        expect((await api(fresh)('GET', '/v1/listings')).body.items.map((l: { id: string }) => l.id)).toEqual([
          good.body.id,
        ]),
      );
    });

    it('authenticates at the gateway: no key 401, revoked key 401 at once, other accounts see 404', async () => {
      expect((await api(null)('GET', '/v1/listings')).status).toBe(401);
      const key = await api(admin)('POST', '/v1/api-keys', { name: 'feed', role: 'integration' });
      expect(key.status).toBe(201);
      expect((await api(key.body.secret)('GET', '/v1/listings')).status).toBe(200);
      await api(admin)('DELETE', `/v1/api-keys/${key.body.id}`);
      expect((await api(key.body.secret)('GET', '/v1/listings')).status).toBe(401);

      const mine = await api(admin)('POST', '/v1/listings', listingBody());
      const other = await api(platform)('POST', '/v1/accounts', { name: `Other ${run}` });
      expect(other.status).toBe(201);
      const theirs = other.body.adminKey.secret;
      expect((await api(theirs)('GET', `/v1/listings/${mine.body.id}`)).status).toBe(404);
      expect((await api(theirs)('PATCH', `/v1/listings/${mine.body.id}`, { status: 'closed' })).status).toBe(404);
    });

    it('services refuse requests that did not come through the gateway', async () => {
      const direct = await fetch(`${listingsUrl}/v1/listings`, { headers: { authorization: `Bearer ${admin}` } });
      expect(direct.status).toBe(401);
      expect(((await direct.json()) as { code: string }).code).toBe('unauthorized');
    });

    it('replays an Idempotency-Key across the proxy', async () => {
      const headers = { 'idempotency-key': `idem-${run}` };
      const first = await api(admin)('POST', '/v1/listings', listingBody(), headers);
      const second = await api(admin)('POST', '/v1/listings', listingBody(), headers);
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
    });

    it('carries the request id to the service that handled the request, into its logs', async () => {
      const requestId = `sys-${run}-trace`;
      const res = await api(admin)('GET', '/v1/listings', undefined, { 'x-request-id': requestId });
      expect(res.headers.get('x-request-id')).toBe(requestId);
      // The service logs the request as it completes, a moment after the answer left.
      await eventually(() => {
        const lines = cluster
          .process('listings')
          .output()
          .split('\n')
          .filter((l) => l.includes(requestId));
        expect(lines.length).toBeGreaterThan(0);
        for (const line of lines) expect(JSON.parse(line)).toMatchObject({ service: 'listings', requestId });
      });
      const allLogs = cluster.processes.map((s) => s.output()).join('\n');
      expect(allLogs).not.toContain(admin);
    });

    it('serves the merged OpenAPI document at the gateway, each POST declaring the Idempotency-Key it honours', async () => {
      type Operation = { parameters?: Array<{ name: string; in: string }> };
      // A service slow to hand over its document is left out of that answer and asked again for the next one.
      const doc = await eventually(async () => {
        const merged = (await (await fetch(`${gateway}/openapi.json`)).json()) as {
          paths: Record<string, Record<string, Operation>>;
        };
        expect(Object.keys(merged.paths)).toEqual(
          expect.arrayContaining(['/v1/listings', '/v1/listings/{id}', '/v1/leads', '/v1/api-keys']),
        );
        return merged;
      });
      for (const path of ['/v1/listings', '/v1/listings/bulk', '/v1/leads', '/v1/api-keys'])
        expect([path, doc.paths[path].post.parameters]).toEqual([
          path,
          expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header' })]),
        ]);
    });

    it('answers a keyed 405 with the RateLimit headers', async () => {
      const res = await api(admin)('PUT', '/v1/listings', {});
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
      expect(res.headers.get('ratelimit-limit')).toEqual(expect.any(String));
      expect(res.headers.get('ratelimit-remaining')).toEqual(expect.any(String));
    });

    it('finds a listing in search as soon as its creation is answered, and no more once its deletion is', async () => {
      const fresh = (await api(platform)('POST', '/v1/accounts', { name: `Search at once ${run}` })).body.adminKey
        .secret as string;
      const created = await api(fresh)('POST', '/v1/listings', listingBody({ pricing: { listPrice: 333000 } }));
      expect(created.status).toBe(201);
      const found = await api(fresh)('GET', '/v1/listings');
      expect(found.body).toMatchObject({ total: 1, items: [{ id: created.body.id, version: 1 }] });
      await api(fresh)('PATCH', `/v1/listings/${created.body.id}`, { pricing: { listPrice: 344000 } });
      expect((await api(fresh)('GET', '/v1/listings?minPrice=340000')).body.total).toBe(1);
      expect((await api(fresh)('DELETE', `/v1/listings/${created.body.id}`)).status).toBe(200);
      expect((await api(fresh)('GET', '/v1/listings')).body.total).toBe(0);
    });

    it('answers a 12 MB JSON body 413 problem+json, received whole by a client that sends the body first', async () => {
      const answer = await postWhole(
        `${gateway}/v1/listings`,
        { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        Buffer.from(JSON.stringify({ propertyDetails: { description: 'x'.repeat(12 * 1024 * 1024) } })),
      );
      expect(answer.error).toBeUndefined();
      expect(answer.status).toBe(413);
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'payload_too_large', status: 413 });
    });
  },
);
