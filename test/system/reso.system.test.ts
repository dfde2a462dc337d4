import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { o } from 'odata';
import sharp from 'sharp';
import {
  commander,
  commanderAvailable,
  COMMANDER_PARAMETERS,
  describeWithEngines,
  eventually,
  listingBody,
  seedCoreListings,
} from '@estate/testing';
import { apiClient, startCluster, type Api, type Cluster } from './harness';

/**
 * Tier 3: the RESO Web API in the distributed profile. The gateway authenticates keys and client-credentials tokens
 * and forwards /reso/odata to the listings service, which filters on Elasticsearch and reads galleries from the media
 * service for $expand=Media. RESO's own Core tests and an OData client from the registry run against the gateway.
 */
type Row = Record<string, unknown>;
type Page = { value: Row[]; '@odata.nextLink'?: string };
const MINUTES = 60_000;

describeWithEngines(
  'RESO Web API through the gateway (separate processes, MongoDB, NATS, Elasticsearch)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;
    let api: Api;
    let ids: string[];

    beforeAll(async () => {
      cluster = await startCluster({
        name: 'sysreso',
        engines: urls,
        logLevel: 'warn',
        // The feed test syncs one account from the gateway's own RESO server, on this host.
        env: { listings: { FEEDS_ALLOW_PRIVATE_SOURCES: '1' } },
      });
      api = apiClient(cluster.gateway, cluster.keys.admin);
      ids = await seedCoreListings(cluster.gateway, cluster.keys.admin);
      const jpeg = (background: string) =>
        sharp({ create: { width: 40, height: 30, channels: 3, background } })
          .jpeg()
          .toBuffer();
      const form = new FormData();
      form.append('file', new Blob([await jpeg('#a63')], { type: 'image/jpeg' }), 'a.jpg');
      form.append('caption', 'Front');
      form.append('file', new Blob([await jpeg('#36a')], { type: 'image/jpeg' }), 'b.jpg');
      expect((await api('POST', `/v1/listings/${ids[0]}/media`, form)).status).toBe(201);
      // Search follows the events: every listing, and the first one's two photos, are there before the tests.
      await eventually(
        async () => {
          const page = await api('GET', `/reso/odata/Property?$count=true&$top=0`);
          expect(page.body['@odata.count']).toBe(ids.length);
          const first = await api('GET', `/reso/odata/Property('${ids[0]}')?$select=PhotosCount`);
          expect(first.body.PhotosCount).toBe(2);
          const media = await api('GET', `/reso/odata/Property('${ids[0]}')/Media`);
          expect(media.body.value).toHaveLength(2);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    }, 3 * MINUTES);

    afterAll(async () => {
      await cluster?.stop();
    }, MINUTES);

    it('replicates listings with their photos through the gateway with a client-credentials token and nextLinks', async () => {
      const key = (await api('POST', '/v1/api-keys', { name: 'portal', role: 'integration' })).body;
      const issued = await fetch(`${cluster.gateway}/reso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.secret }),
      });
      expect(issued.status).toBe(200);
      const token = ((await issued.json()) as { access_token: string }).access_token;
      const client = () =>
        o(`${cluster.gateway}/reso/odata/`, {
          fragment: '',
          headers: { authorization: `Bearer ${token}`, prefer: 'odata.maxpagesize=4' },
        });
      const pages: Page[] = [
        (await client()
          .get('Property')
          .query({ $orderby: 'ModificationTimestamp,ListingKey', $expand: 'Media' })) as Page,
      ];
      for (let next = pages[0]['@odata.nextLink']; next; next = pages[pages.length - 1]['@odata.nextLink']) {
        expect(next.startsWith(`${cluster.gateway}/reso/odata/Property?`)).toBe(true);
        pages.push((await client().get(next).query()) as Page);
      }
      const rows = pages.flatMap((p) => p.value);
      expect(pages).toHaveLength(Math.ceil(ids.length / 4));
      expect(rows.map((r) => r.ListingKey).sort()).toEqual([...ids].sort());
      const photos = rows.find((r) => r.ListingKey === ids[0])!.Media as Row[];
      expect(photos.map((m) => m.Order)).toEqual([0, 1]);
      const image = await fetch(String(photos[0].MediaURL));
      expect(image.status).toBe(200);
      const agent = await fetch(`${cluster.gateway}/reso/odata/Property`);
      expect(agent.status).toBe(401);
    });

    it('syncs one account into another through a feed (POST /v1/feeds at the gateway) with its photos, then only what changed', async () => {
      const mirror = await apiClient(cluster.gateway, cluster.keys.platform)('POST', '/v1/accounts', {
        name: `Mirror ${cluster.run}`,
      });
      expect(mirror.status).toBe(201);
      const b = apiClient(cluster.gateway, mirror.body.adminKey.secret);
      const created = await b('POST', '/v1/feeds', {
        name: 'First account',
        serviceRoot: `${cluster.gateway}/reso/odata`,
        auth: { type: 'bearer', token: cluster.keys.admin },
        originatingSystemName: 'first-account',
        budget: { requestsPerSecond: 50 },
        pageSize: 3,
        media: true,
      });
      expect(created.status).toBe(201);
      expect((await b('GET', '/v1/feeds')).body).toMatchObject({ total: 1 });
      const run = async () => {
        const started = await b('POST', `/v1/feeds/${created.body.id}/runs`);
        expect(started.status).toBe(202);
        return eventually(
          async () => {
            const job = (await b('GET', `/v1/jobs/${started.body.id}`)).body;
            if (['queued', 'running'].includes(job.state)) throw new Error(`run still ${job.state}`);
            return job as { state: string; ledger: Record<string, number>; errors: unknown[] };
          },
          { timeoutMs: 60_000, intervalMs: 100 },
        );
      };
      const first = await run();
      expect({ state: first.state, errors: first.errors }).toEqual({ state: 'succeeded', errors: [] });
      expect(first.ledger).toMatchObject({
        fetched: ids.length,
        created: ids.length,
        failed: 0,
        mediaDownloaded: 2,
        mediaUploaded: 2,
        mediaFailed: 0,
      });
      const mirrored = async () =>
        new Map(
          ((await b('GET', '/v1/listings?limit=100')).body.items as Array<{ externalId: string; version: number }>).map(
            (l) => [l.externalId, l],
          ),
        );
      // Search follows the events of the second account's writes.
      await eventually(async () => expect([...(await mirrored()).keys()].sort()).toEqual([...ids].sort()), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      // The first listing's photos went through the media service's upload path: same order and caption, rendered.
      const copy = (await mirrored()).get(ids[0]) as unknown as { id: string };
      await eventually(
        async () => {
          const gallery = (await b('GET', `/v1/listings/${copy.id}/media`)).body.items as Array<
            Record<string, unknown>
          >;
          expect(gallery.map((m) => ({ caption: m.caption ?? null, status: m.status, order: m.order }))).toEqual([
            { caption: 'Front', status: 'ready', order: 0 },
            { caption: null, status: 'ready', order: 1 },
          ]);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );

      // A price changes in the first account; once its RESO server shows it, the next run writes that alone.
      expect((await api('PATCH', `/v1/listings/${ids[1]}`, { pricing: { listPrice: 123_456 } })).status).toBe(200);
      await eventually(
        async () => {
          const row = await api('GET', `/reso/odata/Property('${ids[1]}')?$select=ListPrice`);
          expect(row.body.ListPrice).toBe(123_456);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      const second = await run();
      expect(second.state).toBe('succeeded');
      // Photos whose PhotosChangeTimestamp did not move are not looked at again.
      expect(second.ledger).toMatchObject({ created: 0, updated: 1, failed: 0, mediaDownloaded: 0, mediaUploaded: 0 });
      await eventually(
        async () => {
          const after = await mirrored();
          expect(after.get(ids[1])).toMatchObject({ version: 2, pricing: { listPrice: 123_456 } });
          // A listing without photos (the first one's versions count its gallery's changes too).
          expect(after.get(ids[2])!.version).toBe(1);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );

      // A listing made, synced, then deleted on the first account: the next run learns of the deletion from its
      // EntityEvent (the webhooks service's, through the gateway) and hides it, without a key pull.
      const extra = await api('POST', '/v1/listings', listingBody());
      expect(extra.status).toBe(201);
      const served = async (gone: boolean) =>
        eventually(
          async () => {
            const found = await api('GET', `/reso/odata/Property?$filter=ListingKey eq '${extra.body.id}'`);
            expect(found.body.value).toHaveLength(gone ? 0 : 1);
          },
          { timeoutMs: 60_000, intervalMs: 100 },
        );
      await served(false);
      expect((await run()).ledger).toMatchObject({ created: 1 });
      expect((await api('DELETE', `/v1/listings/${extra.body.id}`)).status).toBe(200);
      await served(true);
      await eventually(
        async () => {
          const newest = await api('GET', '/reso/odata/EntityEvent?$orderby=EntityEventSequence desc&$top=1');
          expect(newest.body.value[0]).toMatchObject({
            ResourceName: 'Property',
            ResourceRecordKey: extra.body.id,
            X_EventType: expect.stringContaining('deleted'),
          });
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      const third = await run();
      expect(third.state).toBe('succeeded');
      expect(third.ledger).toMatchObject({ keys: null, quarantined: 1, removed: 0 });
      await eventually(async () => expect((await mirrored()).has(extra.body.id)).toBe(false), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
    });

    it(
      "passes RESO's Web API Core 2.0 tests and the Data Dictionary metadata checks",
      async () => {
        if (!(await commanderAvailable())) return;
        const core = await commander([
          'core',
          `${cluster.gateway}/reso/odata`,
          cluster.keys.admin,
          ids[0],
          ...COMMANDER_PARAMETERS,
        ]);
        expect({ last: core.last, failures: core.code === 0 ? '' : core.output.slice(-4000) }).toEqual({
          last: expect.stringMatching(/^commander_core passed=4\d failed=0 skipped=\d$/),
          failures: '',
        });
        const metadata = await fetch(`${cluster.gateway}/reso/odata/$metadata`, {
          headers: { authorization: `Bearer ${cluster.keys.admin}` },
        });
        const file = join(tmpdir(), `reso-metadata-sys-${process.pid}.xml`);
        writeFileSync(file, await metadata.text());
        const checked = await commander(['metadata', file]);
        expect(checked.last).toMatch(/^commander_metadata passed=[1-9]\d* failed=0 skipped=\d+$/);
      },
      20 * MINUTES,
    );
  },
);
