import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { NatsBus, natsConnectOptions } from '@estate/bus/nats.bus';
import { bodyDigest, signRequest } from '@estate/platform/auth';
import {
  describeWithEngines,
  enginesRequired,
  eventually,
  listingBody,
  natsServiceCredentials,
  natsUrlWithoutCredentials,
} from '@estate/testing';
import pino from 'pino';
import sharp from 'sharp';
import { apiClient, startCluster, type Cluster } from '../system/harness';

interface Captured {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Stands between the gateway and the listings service and keeps what the gateway sent: a wire tap. While
 * `hold` is set it keeps requests without passing them on (answering 503), as an interceptor would.
 */
async function startWireTap() {
  const tap = { url: '', target: '', hold: false, captured: [] as Captured[], close: async () => undefined as void };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([, v]) => typeof v === 'string') as [string, string][],
      );
      const body = Buffer.concat(chunks);
      tap.captured.push({ method: req.method!, url: req.url!, headers, body });
      if (tap.hold) {
        res.writeHead(503);
        res.end();
        return;
      }
      const forwarded = { ...headers };
      delete forwarded.host;
      delete forwarded.connection;
      fetch(`${tap.target}${req.url}`, {
        method: req.method,
        headers: forwarded,
        body: body.length > 0 ? body : undefined,
      }).then(
        async (answer) => {
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tap.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tap.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return tap;
}

/** Connects to NATS with the given credentials (none: anonymous); the error when the server refuses. */
async function natsAs(
  url: string,
  auth?: { NATS_USER: string; NATS_PASSWORD: string },
): Promise<NatsConnection | Error> {
  try {
    return await connect({
      ...natsConnectOptions(
        natsUrlWithoutCredentials(url),
        auth && { user: auth.NATS_USER, password: auth.NATS_PASSWORD },
      ),
      name: 'service-trust-probe',
      timeout: 3000,
      reconnect: false,
    });
  } catch (err) {
    return err as Error;
  }
}

/**
 * Tier 3, security: the trust between the gateway and the services, and between the services and NATS.
 * The services run as processes on the engines; the NATS checks need a server with authorization on
 * (scripts/engines/up.sh writes one) and the per-service credentials it prints.
 */
describeWithEngines('service trust', ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'], (urls) => {
  const previous = randomBytes(32).toString('hex');
  let cluster: Cluster;
  let tap: Awaited<ReturnType<typeof startWireTap>>;
  let listingsUrl = '';
  let mediaUrl = '';
  let admin = '';
  let other = '';
  let accountId = '';
  let otherAccountId = '';
  let listingId = '';

  const api = (key: string) => apiClient(cluster.gateway, key);
  const listing = async () => (await api(admin)('GET', `/v1/listings/${listingId}`)).body;
  /** Sends a request straight to a service port, as something that is not the gateway. */
  const direct = async (base: string, method: string, url: string, headers: Record<string, string>, body?: Buffer) => {
    const res = await fetch(`${base}${url}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const signed = (
    method: string,
    url: string,
    body: Buffer | undefined,
    options: { secret?: string; now?: number; who?: string } = {},
  ) =>
    signRequest(
      { accountId: options.who ?? accountId, keyId: 'key_trust', role: 'admin', agentId: null },
      {
        caller: 'gateway',
        secret: options.secret ?? cluster.signingSecret,
        method,
        url,
        digest: bodyDigest(body),
        now: options.now,
      },
    );
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));

  beforeAll(async () => {
    tap = await startWireTap();
    cluster = await startCluster({
      name: 'systrust',
      engines: urls,
      // The services accept the secret of the previous rotation beside the current one.
      envAll: { INTERNAL_SIGNING_SECRET_PREVIOUS: previous },
      env: { gateway: { LISTINGS_URL: tap.url } },
      // The tap forwards to the listings process once it listens (before the gateway starts).
      onStarted: (service) => {
        if (service.name === 'listings') void service.listening.then(() => (tap.target = service.url));
      },
    });
    listingsUrl = cluster.process('listings').url;
    mediaUrl = cluster.process('media').url;
    const platform = apiClient(cluster.gateway, cluster.keys.platform);
    const a = (await platform('POST', '/v1/accounts', { name: 'Trusting' })).body;
    const b = (await platform('POST', '/v1/accounts', { name: 'Other' })).body;
    ({ secret: admin } = a.adminKey);
    ({ secret: other } = b.adminKey);
    accountId = a.account.id;
    otherAccountId = b.account.id;
    const created = await api(admin)('POST', '/v1/listings', listingBody({ pricing: { listPrice: 300000 } }));
    expect(created.status).toBe(201);
    listingId = created.body.id;
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    await tap?.close();
  }, 60_000);

  describe('signed identity', () => {
    it('refuses a captured request sent to the service port with another body, and then with its own', async () => {
      const before = await listing();
      tap.hold = true;
      try {
        await api(admin)('PATCH', `/v1/listings/${listingId}`, { pricing: { listPrice: 310000 } });
      } finally {
        tap.hold = false;
      }
      const capture = tap.captured.find((c) => c.method === 'PATCH' && c.url === `/v1/listings/${listingId}`)!;
      expect(capture.headers['x-estate-signature']).toBeDefined();

      const otherBody = json({ pricing: { listPrice: 1 } });
      const tampered = await direct(
        listingsUrl,
        'PATCH',
        capture.url,
        { ...capture.headers, 'content-length': String(otherBody.length) },
        otherBody,
      );
      expect(tampered.status).toBe(401);
      expect(tampered.body).toMatchObject({ code: 'unauthorized', detail: expect.stringMatching(/body/) });
      // The captured request as it was: its nonce went with the refused attempt.
      const replayed = await direct(listingsUrl, 'PATCH', capture.url, capture.headers, capture.body);
      expect(replayed.status).toBe(401);
      expect(await listing()).toEqual(before);
    });

    it('refuses the same nonce twice, and a stale signature', async () => {
      const before = await listing();
      const body = json({ pricing: { listPrice: 320000 } });
      const headers = { 'content-type': 'application/json', ...signed('PATCH', `/v1/listings/${listingId}`, body) };
      expect((await direct(listingsUrl, 'PATCH', `/v1/listings/${listingId}`, headers, body)).status).toBe(200);
      const after = await listing();
      expect(after).toMatchObject({ version: before.version + 1, pricing: { listPrice: 320000 } });
      expect((await direct(listingsUrl, 'PATCH', `/v1/listings/${listingId}`, headers, body)).status).toBe(401);

      const late = json({ pricing: { listPrice: 330000 } });
      const stale = {
        'content-type': 'application/json',
        ...signed('PATCH', `/v1/listings/${listingId}`, late, { now: Date.now() - 61_000 }),
      };
      expect((await direct(listingsUrl, 'PATCH', `/v1/listings/${listingId}`, stale, late)).status).toBe(401);
      expect(await listing()).toEqual(after);
    });

    it('accepts the previous secret while it is configured, and no other', async () => {
      const body = json({ pricing: { listPrice: 340000 } });
      const unknown = {
        'content-type': 'application/json',
        ...signed('PATCH', `/v1/listings/${listingId}`, body, { secret: randomBytes(32).toString('hex') }),
      };
      const before = await listing();
      expect((await direct(listingsUrl, 'PATCH', `/v1/listings/${listingId}`, unknown, body)).status).toBe(401);
      expect(await listing()).toEqual(before);
      const rotated = {
        'content-type': 'application/json',
        ...signed('PATCH', `/v1/listings/${listingId}`, body, { secret: previous }),
      };
      expect((await direct(listingsUrl, 'PATCH', `/v1/listings/${listingId}`, rotated, body)).status).toBe(200);
      expect(await listing()).toMatchObject({ version: before.version + 1, pricing: { listPrice: 340000 } });
    });

    it('refuses an upload whose bytes are not the signed ones, and stores none of it', async () => {
      const path = `/v1/listings/${listingId}/media`;
      const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c83' } })
        .jpeg()
        .toBuffer();
      const encode = async (data: Buffer) => {
        const form = new FormData();
        form.append('file', new Blob([data], { type: 'image/jpeg' }), 'p.jpg');
        const request = new Request('http://localhost', { method: 'POST', body: form });
        return { type: request.headers.get('content-type')!, bytes: Buffer.from(await request.arrayBuffer()) };
      };
      const genuine = await encode(photo);
      const other = await sharp({ create: { width: 48, height: 64, channels: 3, background: '#38c' } })
        .jpeg()
        .toBuffer();
      const swapped = await encode(other);
      const headers = { ...signed('POST', path, genuine.bytes), 'content-type': swapped.type };
      const refused = await direct(mediaUrl, 'POST', path, headers, swapped.bytes);
      expect(refused.status).toBe(401);
      expect((await api(admin)('GET', `${path}?limit=100`)).body.items).toEqual([]);
      // The same upload signed over its own bytes is stored: the refusal was the digest's.
      const fine = { ...signed('POST', path, swapped.bytes), 'content-type': swapped.type };
      expect((await direct(mediaUrl, 'POST', path, fine, swapped.bytes)).status).toBe(201);
      expect((await api(admin)('GET', `${path}?limit=100`)).body.items).toHaveLength(1);
    });
  });

  describe('NATS', () => {
    const listingsUser = () => natsServiceCredentials('listings');
    const mediaUser = () => natsServiceCredentials('media');
    let authOn = false;

    beforeAll(async () => {
      const anonymous = await natsAs(urls.NATS_URL);
      if (anonymous instanceof Error) authOn = true;
      else await anonymous.close();
      const ready = authOn && listingsUser() && mediaUser();
      if (!ready) {
        const why =
          'the NATS server does not require authentication, or NATS_PASSWORD_<SERVICE> is not set (run scripts/engines/up.sh)';
        if (enginesRequired()) throw new Error(`service trust: ${why}`);
        process.stderr.write(`\n[engines] service trust: NATS checks not run: ${why}\n`);
      }
    });

    /** Publishes as a service user; resolves to the refusal (or null when the server took it). */
    async function publishAs(user: { NATS_USER: string; NATS_PASSWORD: string }, subject: string, payload: unknown) {
      const nc = await natsAs(urls.NATS_URL, user);
      if (nc instanceof Error) throw nc;
      try {
        await jetstream(nc).publish(`${cluster.namespace}.${subject}`, JSON.stringify(payload), { timeout: 3000 });
        return null;
      } catch (err) {
        return err as Error;
      } finally {
        await nc.close();
      }
    }

    /** Messages a stream ever took on a subject (work queues forget theirs once handled: the last sequence counts). */
    async function taken(stream: string, subject: string): Promise<number> {
      const nc = await connect({ ...natsConnectOptions(urls.NATS_URL), name: 'service-trust-streams' });
      try {
        const info = await (
          await jetstreamManager(nc)
        ).streams.info(`${cluster.namespace}_${stream}`, {
          subjects_filter: '>',
        });
        return stream === 'LEADS_COMMANDS'
          ? info.state.last_seq
          : (info.state.subjects?.[`${cluster.namespace}.${subject}`] ?? 0);
      } finally {
        await nc.close();
      }
    }

    it('refuses a connection without credentials', async () => {
      if (!authOn) return;
      const anonymous = await natsAs(urls.NATS_URL);
      expect(anonymous).toBeInstanceOf(Error);
      expect(String(anonymous)).toMatch(/authoriz/i);
    });

    it('refuses a service publishing another service’s subject, and the stream stays as it was', async () => {
      if (!authOn || !listingsUser() || !mediaUser()) return;
      const commands = await taken('LEADS_COMMANDS', 'leads.activity.record');
      const deletes = await taken('LISTINGS', 'listings.listing.deleted');
      const record = {
        eventId: randomUUID(),
        accountId,
        leadId: 'lead_x',
        version: 1,
        occurredAt: new Date().toISOString(),
        source: 'listings',
        activity: { type: 'note', summary: 'forged' },
      };
      expect(String(await publishAs(listingsUser()!, 'leads.activity.record', record))).toMatch(/permission/i);
      const deleted = {
        eventId: randomUUID(),
        accountId,
        listingId,
        version: 99,
        occurredAt: new Date().toISOString(),
      };
      expect(String(await publishAs(mediaUser()!, 'listings.listing.deleted', deleted))).toMatch(/permission/i);
      expect(await taken('LEADS_COMMANDS', 'leads.activity.record')).toBe(commands);
      expect(await taken('LISTINGS', 'listings.listing.deleted')).toBe(deletes);
      expect((await api(admin)('GET', `/v1/listings/${listingId}`)).status).toBe(200);
    });
  });

  describe('events naming another account', () => {
    let bus: NatsBus;
    beforeAll(async () => {
      // The tools user may publish anything: it stands for a publisher that is wrong about the account.
      bus = await NatsBus.connect(urls.NATS_URL, {
        log: pino({ level: 'silent' }),
        name: 'service-trust-forger',
        namespace: cluster.namespace,
      });
    });
    afterAll(async () => {
      await bus?.close();
    });

    it('media keeps a listing’s media when a delete names another account', async () => {
      const own = await api(admin)('POST', '/v1/listings', listingBody());
      const form = new FormData();
      const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3c8' } })
        .jpeg()
        .toBuffer();
      form.append('file', new Blob([photo], { type: 'image/jpeg' }), 'p.jpg');
      expect((await api(admin)('POST', `/v1/listings/${own.body.id}/media`, form)).status).toBe(201);
      const before = (await api(admin)('GET', `/v1/listings/${own.body.id}/media?limit=100`)).body.items;
      expect(before).toHaveLength(1);

      await bus.publish('listings.listing.deleted', {
        eventId: randomUUID(),
        accountId: otherAccountId,
        listingId: own.body.id,
        version: 99,
        occurredAt: new Date().toISOString(),
      });
      await eventually(
        () =>
          expect(cluster.process('media').output()).toMatch(
            new RegExp(`"listingId":"${own.body.id}".*belongs to another account`),
          ),
        { timeoutMs: 20_000 },
      );
      const after = (await api(admin)('GET', `/v1/listings/${own.body.id}/media?limit=100`)).body.items;
      expect(after.map((m: { id: string }) => m.id)).toEqual(before.map((m: { id: string }) => m.id));
    });

    it('leads records no activity on a lead of another account', async () => {
      const lead = await api(admin)('POST', '/v1/leads', {
        name: 'Robin Vale',
        email: `robin-${randomUUID()}@example.com`,
      });
      expect(lead.status).toBe(201);
      const timeline = async () => (await api(admin)('GET', `/v1/leads/${lead.body.id}/activities`)).body.items;
      const before = await timeline();
      const command = (account: string, summary: string) => ({
        eventId: randomUUID(),
        accountId: account,
        leadId: lead.body.id,
        version: 1,
        occurredAt: new Date().toISOString(),
        source: 'portal-bridge',
        activity: { type: 'note' as const, summary },
      });
      const forged = command(otherAccountId, 'forged');
      await bus.publish('leads.activity.record', forged);
      await eventually(() => expect(cluster.process('leads').output()).toContain(forged.eventId), {
        timeoutMs: 20_000,
      });
      expect(await timeline()).toEqual(before);
      // The other account cannot see it either.
      expect((await api(other)('GET', `/v1/leads/${lead.body.id}`)).status).toBe(404);
      // The same command naming the lead's own account is recorded: the refusal was the account's.
      await bus.publish('leads.activity.record', command(accountId, 'genuine'));
      await eventually(async () =>
        expect((await timeline()).map((a: { summary?: string }) => a.summary)).toContain('genuine'),
      );
      expect((await timeline()).map((a: { summary?: string }) => a.summary)).not.toContain('forged');
    });
  });
});
