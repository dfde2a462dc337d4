import { eventually, WebhookReceiver } from '@estate/testing';
import { deliverySeq } from '../src/event.rules';
import { DELIVERIES_COLLECTION, deliveryId, type DeliveryDoc } from '../src/repositories/delivery.repository';
import {
  endedJob,
  image,
  jobCompleted,
  lead,
  leadEvent,
  listing,
  listingDeleted,
  listingEvent,
  mediaProcessed,
} from './fixtures';
import { admin, agent, integration, log, otherAdmin, startWebhooks, tempDir, type WebhooksHarness } from './harness';
import { MemoryBus } from '@estate/bus/memory.bus';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';

let receiver: WebhookReceiver;
let h: WebhooksHarness;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
});
afterEach(async () => {
  // The receiver first: it drops the connections it holds open, so no attempt waits out its timeout.
  await receiver.stop();
  await h?.close();
});

/** Registers an endpoint and teaches the receiver its secret. */
async function register(name: string, events: string[] = ['*'], who = admin): Promise<{ id: string; secret: string }> {
  const res = await h.call(who, 'POST', '/v1/webhooks', { url: receiver.url(name), events });
  expect(res.statusCode).toBe(201);
  const body = res.json();
  receiver.secret(name, body.secret);
  return body;
}

describe('webhook endpoints', () => {
  beforeEach(async () => {
    h = await startWebhooks();
  });

  it('registers an endpoint with a Standard Webhooks secret shown once, and lists, reads, patches and removes it', async () => {
    const res = await h.call(admin, 'POST', '/v1/webhooks', {
      url: receiver.url('crm'),
      events: ['lead.assigned', 'listing.created'],
      description: 'CRM',
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.location).toBe(`/v1/webhooks/${res.json().id}`);
    const created = res.json();
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    expect(created).toMatchObject({ enabled: true, events: ['lead.assigned', 'listing.created'], version: 1 });

    const got = await h.call(admin, 'GET', `/v1/webhooks/${created.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json().secret).toBeUndefined();
    expect(got.headers.etag).toBe('"1"');
    expect(JSON.stringify(got.json())).not.toContain(created.secret.slice(6));

    const list = await h.call(admin, 'GET', '/v1/webhooks');
    expect(list.json()).toMatchObject({ total: 1, nextCursor: null, items: [{ id: created.id }] });

    const stale = await h.call(admin, 'PATCH', `/v1/webhooks/${created.id}`, { enabled: false }, { 'if-match': '"7"' });
    expect(stale.statusCode).toBe(412);
    const patched = await h.call(
      admin,
      'PATCH',
      `/v1/webhooks/${created.id}`,
      { enabled: false, description: null },
      { 'if-match': '"1"' },
    );
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ enabled: false, description: null, version: 2 });

    const removed = await h.call(admin, 'DELETE', `/v1/webhooks/${created.id}`);
    expect(removed.json()).toEqual({ id: created.id, deleted: true });
    expect((await h.call(admin, 'GET', `/v1/webhooks/${created.id}`)).statusCode).toBe(404);
  });

  it('is admin only, and never shows one account the endpoints of another', async () => {
    const { id } = await register('a');
    for (const who of [integration, agent]) {
      expect((await h.call(who, 'GET', '/v1/webhooks')).statusCode).toBe(403);
      expect((await h.call(who, 'POST', '/v1/webhooks', { url: receiver.url('x'), events: ['*'] })).statusCode).toBe(
        403,
      );
    }
    expect((await h.call(otherAdmin, 'GET', `/v1/webhooks/${id}`)).statusCode).toBe(404);
    expect((await h.call(otherAdmin, 'POST', `/v1/webhooks/${id}/test`)).statusCode).toBe(404);
    expect((await h.call(otherAdmin, 'GET', '/v1/webhooks')).json().total).toBe(0);
    expect((await h.call(null, 'GET', '/v1/webhooks')).statusCode).toBe(401);
  });

  it('refuses bad bodies with every bad field, and a 21st endpoint', async () => {
    const bad = await h.call(admin, 'POST', '/v1/webhooks', { url: 'ftp://x', events: ['nope'], secret: 'mine' });
    expect(bad.statusCode).toBe(422);
    const paths = bad.json().errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['url', 'events.0']));
    expect(
      (await h.call(admin, 'POST', '/v1/webhooks', { url: receiver.url('x'), events: ['*', 'lead.created'] }))
        .statusCode,
    ).toBe(422);
    for (let i = 0; i < 20; i++) await register(`e${i}`);
    const over = await h.call(admin, 'POST', '/v1/webhooks', { url: receiver.url('e21'), events: ['*'] });
    expect(over.statusCode).toBe(409);
    expect(over.json().code).toBe('webhook_limit_reached');
    expect((await h.call(admin, 'GET', '/v1/webhooks?limit=100')).json().total).toBe(20);
  });

  it('sends a test event, signed, and rotating the secret signs later attempts with the new one only', async () => {
    const { id, secret } = await register('t');
    const sent = await h.call(admin, 'POST', `/v1/webhooks/${id}/test`);
    expect(sent.statusCode).toBe(202);
    const first = await eventually(() => {
      const got = receiver.verified('t');
      expect(got).toHaveLength(1);
      return got[0];
    });
    expect(first.event).toMatchObject({ type: 'webhook.test', accountId: admin.accountId, data: { webhookId: id } });
    expect(first.headers['webhook-id']).toBe(first.event!.id);

    const rotated = await h.call(admin, 'POST', `/v1/webhooks/${id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.headers['cache-control']).toBe('no-store');
    expect(rotated.json().secret).not.toBe(secret);
    // The receiver still holds the old secret: the next delivery must fail its verification.
    await h.call(admin, 'POST', `/v1/webhooks/${id}/test`);
    await eventually(() => expect(receiver.unverified()).toHaveLength(1));
    receiver.secret('t', rotated.json().secret);
    await h.call(admin, 'POST', `/v1/webhooks/${id}/test`);
    await eventually(() => expect(receiver.verified('t')).toHaveLength(2));
  });
});

describe('deliveries', () => {
  it('delivers each event type to subscribed endpoints only, with data as GET answers it', async () => {
    h = await startWebhooks();
    await register('all');
    await register('leads', ['lead.created', 'lead.status_changed']);
    await register('other', ['*'], otherAdmin);

    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_1'));
    await listingEvent(h.bus, admin.accountId, 'listings.listing.updated', listing('lst_1', 2, 500000));
    await listingDeleted(h.bus, admin.accountId, 'lst_1', 3);
    await leadEvent(h.bus, h.shelf, admin.accountId, 'leads.lead.created', lead('led_1'));
    await leadEvent(h.bus, h.shelf, admin.accountId, 'leads.lead.updated', lead('led_1', 2, 'contacted'), ['status']);
    await mediaProcessed(h.bus, h.shelf, admin.accountId, image('med_1', 'lst_2', 'ready'));
    await mediaProcessed(h.bus, h.shelf, admin.accountId, image('med_2', 'lst_2', 'failed'));
    await jobCompleted(h.bus, admin.accountId, endedJob('job_1'));

    const types = [
      'listing.created',
      'listing.updated',
      'listing.deleted',
      'lead.created',
      'lead.updated',
      'lead.status_changed',
      'media.ready',
      'media.failed',
      'job.completed',
    ];
    const all = await eventually(() => {
      const got = receiver.verified('all');
      expect(got.map((d) => d.event!.type).sort()).toEqual([...types].sort());
      return got;
    });
    const byType = Object.fromEntries(all.map((d) => [d.event!.type, d.event!]));
    expect(byType['listing.updated'].data).toMatchObject({ id: 'lst_1', version: 2, pricing: { listPrice: 500000 } });
    expect(byType['listing.deleted'].data).toEqual({ id: 'lst_1', deleted: true, version: 3 });
    expect(byType['lead.status_changed'].data).toMatchObject({ id: 'led_1', status: 'contacted', version: 2 });
    expect(byType['media.ready'].data).toMatchObject({ id: 'med_1', status: 'ready' });
    expect(byType['media.failed'].data).toMatchObject({ id: 'med_2', status: 'failed' });
    expect(byType['job.completed'].data).toEqual(endedJob('job_1'));
    for (const d of all) expect(d.headers['webhook-id']).toBe(d.event!.id);

    await eventually(() =>
      expect(
        receiver
          .verified('leads')
          .map((d) => d.event!.type)
          .sort(),
      ).toEqual(['lead.created', 'lead.status_changed']),
    );
    expect(receiver.verified('other')).toHaveLength(0);
    expect(receiver.unverified()).toHaveLength(0);
  });

  it('skips a lead the event names but the account does not own', async () => {
    h = await startWebhooks();
    await register('all');
    h.shelf.leads.set('led_x', { ...lead('led_x'), accountId: otherAdmin.accountId });
    await h.bus.publish('leads.lead.assigned', {
      eventId: 'forged-1',
      accountId: admin.accountId,
      leadId: 'led_x',
      version: 1,
      occurredAt: new Date().toISOString(),
      agentId: 'agt_1',
      previousAgentId: null,
      assignment: null,
    });
    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_after'));
    await eventually(() => expect(receiver.verified('all')).toHaveLength(1));
    expect(receiver.verified('all')[0].event!.type).toBe('listing.created');
  });

  it('retries a receiver that answers 500 twice, and the third attempt succeeds', async () => {
    h = await startWebhooks();
    const { id } = await register('flaky');
    receiver.answer((_d, attempt) => (attempt < 3 ? 500 : 200));
    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_1'));
    const log = await eventually(async () => {
      const res = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries`)).json();
      expect(res.items[0]).toMatchObject({ state: 'succeeded', attempts: 3, lastStatusCode: 200 });
      return res;
    });
    expect(log.items[0]).toMatchObject({ eventType: 'listing.created', nextAttemptAt: null, lastError: null });
    expect(receiver.verified('flaky')).toHaveLength(3);
    expect(new Set(receiver.verified('flaky').map((d) => d.event!.id)).size).toBe(1);
    // The endpoint is marked healthy after the delivery's outcome is recorded.
    await eventually(async () =>
      expect((await h.call(admin, 'GET', `/v1/webhooks/${id}`)).json().failingSince).toBeNull(),
    );
  });

  it('marks a delivery failed once the schedule is spent, and a manual retry sends it once more', async () => {
    h = await startWebhooks({ options: { retryScheduleMs: [50, 50] } });
    const { id } = await register('down');
    receiver.answer(() => 503);
    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_1'));
    const failed = await eventually(async () => {
      const res = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries?state=failed`)).json();
      expect(res.items).toHaveLength(1);
      return res.items[0];
    });
    expect(failed).toMatchObject({ attempts: 3, lastStatusCode: 503, nextAttemptAt: null, lastError: 'answered 503' });
    // The endpoint is marked failing after each failed attempt is recorded.
    await eventually(async () =>
      expect((await h.call(admin, 'GET', `/v1/webhooks/${id}`)).json().failingSince).not.toBeNull(),
    );

    receiver.answer(() => 204);
    const retry = await h.call(admin, 'POST', `/v1/webhooks/${id}/deliveries/${failed.id}/retry`);
    expect(retry.statusCode).toBe(202);
    await eventually(async () => {
      const res = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries`)).json();
      expect(res.items[0]).toMatchObject({ state: 'succeeded', attempts: 4, lastStatusCode: 204 });
    });
    await eventually(async () =>
      expect((await h.call(admin, 'GET', `/v1/webhooks/${id}`)).json().failingSince).toBeNull(),
    );
    expect((await h.call(admin, 'POST', `/v1/webhooks/${id}/deliveries/nope/retry`)).statusCode).toBe(404);
  });

  it("keeps delivering to one account while another account's receiver hangs", async () => {
    h = await startWebhooks({ options: { endpointConcurrency: 2, concurrency: 8 } });
    await register('slow');
    await register('fast', ['*'], otherAdmin);
    receiver.answer((d) => (d.endpoint === 'slow' ? 'hang' : 200));
    for (let i = 0; i < 20; i++)
      await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing(`lst_slow_${i}`));
    for (let i = 0; i < 20; i++)
      await listingEvent(h.bus, otherAdmin.accountId, 'listings.listing.created', listing(`lst_fast_${i}`));
    // The hanging receiver holds its two slots and no more, while the other account's twenty go through.
    await eventually(() => {
      expect(receiver.verified('fast')).toHaveLength(20);
      expect(receiver.verified('slow')).toHaveLength(2);
    });
  });

  it('refuses a private target at delivery time when private targets are not allowed', async () => {
    const { dir, remove } = tempDir();
    try {
      const path = `${dir}/webhooks.sqlite`;
      h = await startWebhooks({ store: SqliteDocumentStore.open(path) });
      const { id } = await register('private');
      await h.close();
      // The same data, now run without the allowance (as production would).
      h = await startWebhooks({ store: SqliteDocumentStore.open(path), options: { allowPrivateTargets: false } });
      await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_1'));
      const d = await eventually(async () => {
        const res = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries`)).json();
        expect(res.items[0]?.attempts).toBeGreaterThanOrEqual(1);
        return res.items[0];
      });
      expect(d.lastError).toMatch(/target refused/);
      expect(d.lastStatusCode).toBeNull();
      expect(receiver.deliveries).toHaveLength(0);
    } finally {
      remove();
    }
  });

  it('refuses http, private, loopback and link-local URLs when private targets are not allowed', async () => {
    h = await startWebhooks({ options: { allowPrivateTargets: false } });
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest',
      'https://[::1]/x',
      'https://[fe80::1]/x',
      'https://localhost/x',
      'https://192.168.1.10/x',
    ]) {
      const res = await h.call(admin, 'POST', '/v1/webhooks', { url, events: ['*'] });
      expect({ url, status: res.statusCode }).toEqual({ url, status: 422 });
      expect(res.json().errors[0].path).toBe('url');
    }
    expect((await h.call(admin, 'GET', '/v1/webhooks')).json().total).toBe(0);
  });

  it('names the setting that allows a private target, and the CLI that needs none, in the 422', async () => {
    h = await startWebhooks({ options: { allowPrivateTargets: false } });
    const res = await h.call(admin, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:4000/hook', events: ['*'] });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toContain('WEBHOOKS_ALLOW_PRIVATE_TARGETS=1');
    expect(res.json().detail).toContain('webhooks listen');
    expect(res.json().errors[0]).toMatchObject({
      path: 'url',
      message: expect.stringContaining('WEBHOOKS_ALLOW_PRIVATE_TARGETS=1'),
    });
  });

  it('survives a crash mid-delivery: the claim runs out and the delivery is sent', async () => {
    const { dir, remove } = tempDir();
    try {
      const path = `${dir}/webhooks.sqlite`;
      h = await startWebhooks({ store: SqliteDocumentStore.open(path) });
      const { id } = await register('after-crash');
      const envelope = {
        id: 'evt_crash',
        type: 'listing.created',
        createdAt: new Date().toISOString(),
        accountId: admin.accountId,
        data: { id: 'lst_c', version: 1 },
      };
      await h.close();
      // What a process killed while sending leaves behind: a pending delivery claimed until a moment from now.
      const store = SqliteDocumentStore.open(path);
      const deliveries = await store.collection<DeliveryDoc>(DELIVERIES_COLLECTION);
      const now = Date.now();
      await deliveries.insertOne({
        id: deliveryId(id, envelope.id),
        accountId: admin.accountId,
        webhookId: id,
        eventId: envelope.id,
        eventType: envelope.type,
        body: JSON.stringify(envelope),
        state: 'pending',
        attempts: 0,
        nextAttemptAt: new Date(now + 1500).toISOString(),
        lease: 'dead-process',
        createdAt: new Date(now).toISOString(),
      });
      h = await startWebhooks({ store });
      const got = await eventually(() => {
        expect(receiver.verified('after-crash')).toHaveLength(1);
        return receiver.verified('after-crash')[0];
      });
      expect(got.receivedAt).toBeGreaterThanOrEqual(now + 1400);
      expect(got.event).toEqual(envelope);
    } finally {
      remove();
    }
  });

  it('shares the deliveries of one store between two replicas without sending one twice', async () => {
    const { dir, remove } = tempDir();
    const bus = new MemoryBus(log, 5);
    let second: WebhooksHarness | undefined;
    try {
      h = await startWebhooks({
        store: SqliteDocumentStore.open(`${dir}/webhooks.sqlite`),
        bus,
        options: { endpointConcurrency: 64 },
      });
      second = await startWebhooks({
        store: SqliteDocumentStore.open(`${dir}/webhooks.sqlite`),
        bus,
        options: { endpointConcurrency: 64 },
      });
      const { id } = await register('shared');
      // Queued to come due at one moment, so both replicas' workers find the same deliveries due.
      const deliveries = await h.store.collection<DeliveryDoc>(DELIVERIES_COLLECTION);
      const due = new Date(Date.now() + 500).toISOString();
      for (let i = 0; i < 60; i++) {
        const envelope = {
          id: `evt_shared_${i}`,
          type: 'listing.created',
          createdAt: due,
          accountId: admin.accountId,
          data: { id: `lst_${i}` },
        };
        await deliveries.insertOne({
          id: deliveryId(id, envelope.id),
          accountId: admin.accountId,
          webhookId: id,
          eventId: envelope.id,
          eventType: envelope.type,
          body: JSON.stringify(envelope),
          state: 'pending',
          attempts: 0,
          nextAttemptAt: due,
          createdAt: due,
        });
      }
      await eventually(() => expect(new Set(receiver.verified('shared').map((d) => d.event!.id)).size).toBe(60));
      // Each outcome is recorded after the receiver answered it.
      await eventually(async () => {
        const sent = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries?limit=100`)).json();
        expect(sent.items.map((d: { state: string; attempts: number }) => [d.state, d.attempts])).toEqual(
          Array(60).fill(['succeeded', 1]),
        );
      });
      expect(receiver.verified('shared')).toHaveLength(60);
    } finally {
      await second?.close();
      remove();
    }
  });

  it("keeps one resource's deliveries to an endpoint in order across two replicas, also past a failed attempt", async () => {
    const { dir, remove } = tempDir();
    const bus = new MemoryBus(log, 5);
    let second: WebhooksHarness | undefined;
    try {
      // Both replicas share the store and the consumer (the bus hands them the events in turn).
      h = await startWebhooks({ store: SqliteDocumentStore.open(`${dir}/webhooks.sqlite`), bus });
      second = await startWebhooks({ store: SqliteDocumentStore.open(`${dir}/webhooks.sqlite`), bus });
      const { id } = await register('ordered', ['listing.updated']);
      // The receiver fails the first attempt of version 1: the later versions wait for its retry.
      receiver.answer((d, attempt) => (d.event?.data.version === 1 && attempt === 1 ? 500 : 200));
      for (let version = 1; version <= 6; version++)
        await listingEvent(bus, admin.accountId, 'listings.listing.updated', listing('lst_o', version));
      const ok = await eventually(() => {
        const got = receiver.verified('ordered');
        expect(got.filter((d) => d.event!.data.version === 1)).toHaveLength(2);
        expect(new Set(got.map((d) => d.event!.id)).size).toBe(6);
        return got.slice(1);
      });
      // The failed attempt first, then every version once, in order.
      expect(receiver.verified('ordered')[0].event!.data.version).toBe(1);
      expect(ok.map((d) => d.event!.data.version)).toEqual([1, 2, 3, 4, 5, 6]);
      // Each outcome is recorded after the receiver answered it.
      await eventually(async () => {
        const sent = (await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries?limit=10`)).json();
        expect(sent.items.map((d: { state: string }) => d.state)).toEqual(Array(6).fill('succeeded'));
      });
    } finally {
      await second?.close();
      remove();
    }
  });

  it('holds a delivery back while an earlier one of its resource is being sent by another replica', async () => {
    const { dir, remove } = tempDir();
    try {
      h = await startWebhooks({ store: SqliteDocumentStore.open(`${dir}/webhooks.sqlite`) });
      const { id } = await register('held', ['listing.updated']);
      // What another replica leaves while it sends version 1: a pending delivery claimed for a moment more.
      const deliveries = await h.store.collection<DeliveryDoc>(DELIVERIES_COLLECTION);
      const now = Date.now();
      const first = {
        id: 'evt_held_1',
        type: 'listing.updated',
        createdAt: new Date(now).toISOString(),
        accountId: admin.accountId,
        data: listing('lst_h', 1),
      };
      await deliveries.insertOne({
        id: deliveryId(id, first.id),
        accountId: admin.accountId,
        webhookId: id,
        eventId: first.id,
        eventType: first.type,
        resource: 'listing:lst_h',
        seq: deliverySeq(1, 0),
        body: JSON.stringify(first),
        state: 'pending',
        attempts: 0,
        nextAttemptAt: new Date(now + 1500).toISOString(),
        lease: 'other-replica',
        createdAt: new Date(now).toISOString(),
      });
      await listingEvent(h.bus, admin.accountId, 'listings.listing.updated', listing('lst_h', 2));
      const got = await eventually(() => {
        expect(receiver.verified('held')).toHaveLength(2);
        return receiver.verified('held');
      });
      // Version 2 waited for version 1, sent once its claim ran out.
      expect(got.map((d) => d.event!.data.version)).toEqual([1, 2]);
      expect(got[0].receivedAt).toBeGreaterThanOrEqual(now + 1400);
    } finally {
      remove();
    }
  });

  it('does not queue an event twice when the bus delivers it twice', async () => {
    h = await startWebhooks();
    const { id } = await register('once');
    const message = {
      subject: 'listings.listing.created' as const,
      payload: {
        eventId: 'dup-1',
        accountId: admin.accountId,
        listingId: 'lst_d',
        version: 1,
        occurredAt: new Date().toISOString(),
        listing: listing('lst_d'),
      },
      deliveryCount: 1,
    };
    await h.runtime.intake.handle(message);
    await h.runtime.intake.handle({ ...message, deliveryCount: 2 });
    await eventually(() => expect(receiver.verified('once')).toHaveLength(1));
    expect((await h.call(admin, 'GET', `/v1/webhooks/${id}/deliveries`)).json().total).toBe(1);
    expect((await h.call(admin, 'GET', '/v1/events')).json().items).toHaveLength(1);
  });
});

describe('the change feed', () => {
  beforeEach(async () => {
    h = await startWebhooks();
  });

  it("lists the account's events in order, deletions included, with a cursor that is never null", async () => {
    const empty = await h.call(admin, 'GET', '/v1/events');
    expect(empty.statusCode).toBe(200);
    expect(empty.json().items).toEqual([]);
    expect(typeof empty.json().nextCursor).toBe('string');

    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_1'));
    await listingEvent(h.bus, otherAdmin.accountId, 'listings.listing.created', listing('lst_b'));
    await listingEvent(h.bus, admin.accountId, 'listings.listing.updated', listing('lst_1', 2));
    await leadEvent(h.bus, h.shelf, admin.accountId, 'leads.lead.created', lead('led_1'));
    await listingDeleted(h.bus, admin.accountId, 'lst_1', 3);

    // An event is visible once the millisecond it was recorded in has passed (the settle delay is 0 here).
    const read = (url: string, count: number) =>
      eventually(async () => {
        const page = (await h.call(admin, 'GET', url)).json();
        expect(page.items).toHaveLength(count);
        return page;
      });
    const first = await read(`/v1/events?after=${empty.json().nextCursor}&limit=2`, 2);
    expect(first.items.map((e: { type: string }) => e.type)).toEqual(['listing.created', 'listing.updated']);
    const second = await read(`/v1/events?after=${first.nextCursor}&limit=10`, 2);
    expect(second.items.map((e: { type: string }) => e.type)).toEqual(['lead.created', 'listing.deleted']);
    expect(second.items[1]).toMatchObject({
      accountId: admin.accountId,
      data: { id: 'lst_1', deleted: true, version: 3 },
    });
    const upToDate = (await h.call(admin, 'GET', `/v1/events?after=${second.nextCursor}`)).json();
    expect(upToDate.items).toEqual([]);
    expect(upToDate.nextCursor).toBe(second.nextCursor);

    await listingEvent(h.bus, admin.accountId, 'listings.listing.created', listing('lst_2'));
    const next = await read(`/v1/events?after=${upToDate.nextCursor}`, 1);
    expect(next.items.map((e: { data: { id: string } }) => e.data.id)).toEqual(['lst_2']);

    // A poller's first call sends an empty cursor: the feed from the start, as without one.
    const fromStart = (await h.call(integration, 'GET', '/v1/events?after=&limit=2')).json();
    expect(fromStart).toEqual(first);

    const leadsOnly = (await h.call(admin, 'GET', '/v1/events?types=lead.created,lead.updated')).json();
    expect(leadsOnly.items.map((e: { type: string }) => e.type)).toEqual(['lead.created']);
    expect((await h.call(otherAdmin, 'GET', '/v1/events')).json().items).toHaveLength(1);

    // An integration key reads no pipeline: its feed is the same without the lead's event.
    const bridge = (await h.call(integration, 'GET', '/v1/events')).json();
    expect(bridge.items.map((e: { type: string }) => e.type)).toEqual([
      'listing.created',
      'listing.updated',
      'listing.deleted',
      'listing.created',
    ]);
    expect((await h.call(integration, 'GET', '/v1/events?types=lead.created')).statusCode).toBe(403);
  });

  it('refuses agents, bad cursors and bad parameters', async () => {
    expect((await h.call(agent, 'GET', '/v1/events')).statusCode).toBe(403);
    const bad = await h.call(admin, 'GET', '/v1/events?after=not-a-cursor');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('invalid_cursor');
    expect((await h.call(admin, 'GET', '/v1/events?limit=101')).statusCode).toBe(422);
    expect((await h.call(admin, 'GET', '/v1/events?types=listing.exploded')).statusCode).toBe(422);
    expect((await h.call(admin, 'GET', '/v1/events?sort=id')).statusCode).toBe(422);
  });
});
