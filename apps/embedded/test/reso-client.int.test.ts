import { o } from 'odata';
import sharp from 'sharp';
import { eventually, seedCoreListings } from '@estate/testing';
import { listeningProduct, RESO_ADMIN } from './reso-fixture';

/**
 * A third-party OData v4 client from the registry (o.js, package `odata`) reads, filters and replicates the account's
 * listings and photos through the RESO Web API, with a key and with a client-credentials token.
 */

type Row = Record<string, unknown>;
type Page = { value: Row[]; '@odata.nextLink'?: string; '@odata.count'?: number };

/** An o.js handler on the service root; whole answers (not only `value`), pages of three. */
const client = (url: string, token: string) =>
  o(`${url}/reso/odata/`, {
    fragment: '',
    headers: { authorization: `Bearer ${token}`, prefer: 'odata.maxpagesize=3' },
  });

/** Every page of a query, following `@odata.nextLink` as a replicating client does. */
async function walk(url: string, token: string, resource: string, query: Record<string, string>): Promise<Page[]> {
  const pages: Page[] = [(await client(url, token).get(resource).query(query)) as Page];
  for (let next = pages[0]['@odata.nextLink']; next; next = pages[pages.length - 1]['@odata.nextLink'])
    pages.push((await client(url, token).get(next).query()) as Page);
  return pages;
}

describe('o.js (an OData client from the registry) against the RESO Web API', () => {
  let server: Awaited<ReturnType<typeof listeningProduct>>;
  let ids: string[];

  beforeAll(async () => {
    server = await listeningProduct();
    ids = await seedCoreListings(server.url, RESO_ADMIN);
    const jpeg = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#36a' } })
      .jpeg()
      .toBuffer();
    for (const id of ids.slice(0, 2)) {
      const form = new FormData();
      form.append('file', new Blob([jpeg], { type: 'image/jpeg' }), 'a.jpg');
      form.append('file', new Blob([jpeg], { type: 'image/jpeg' }), 'b.jpg');
      const res = await fetch(`${server.url}/v1/listings/${id}/media`, {
        method: 'POST',
        headers: { authorization: `Bearer ${RESO_ADMIN}` },
        body: form,
      });
      expect(res.status).toBe(201);
    }
    await eventually(
      async () => {
        for (const id of ids.slice(0, 2)) {
          const res = await fetch(`${server.url}/v1/listings/${id}`, {
            headers: { authorization: `Bearer ${RESO_ADMIN}` },
          });
          expect(((await res.json()) as { media: { photoCount: number } }).media.photoCount).toBe(2);
        }
      },
      { timeoutMs: 20_000, intervalMs: 25 },
    );
  });

  afterAll(async () => {
    await server?.close();
  });

  it('reads one listing by key and a filtered query with a key', async () => {
    const one = (await client(server.url, RESO_ADMIN).get(`Property('${ids[0]}')`).query()) as Row;
    expect(one).toMatchObject({ ListingKey: ids[0], StandardStatus: 'ActiveUnderContract', BedroomsTotal: 1 });
    const pages = await walk(server.url, RESO_ADMIN, 'Property', {
      $filter: "AccessibilityFeatures/any(a: a eq org.reso.metadata.enums.AccessibilityFeatures'Visitable')",
      $select: 'ListingKey',
      $count: 'true',
    });
    expect(pages[0]['@odata.count']).toBe(2);
    expect(pages.flatMap((p) => p.value.map((r) => r.ListingKey)).sort()).toEqual([ids[0], ids[2]].sort());
  });

  it('replicates every listing with its photos through nextLink, authenticated by client credentials', async () => {
    const created = await fetch(`${server.url}/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${RESO_ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'portal', role: 'integration' }),
    });
    const key = (await created.json()) as { id: string; secret: string };
    const issued = await fetch(`${server.url}/reso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.secret }),
    });
    const { access_token: token } = (await issued.json()) as { access_token: string };
    const pages = await walk(server.url, token, 'Property', {
      $orderby: 'ModificationTimestamp,ListingKey',
      $expand: 'Media',
    });
    const rows = pages.flatMap((p) => p.value);
    expect(pages).toHaveLength(Math.ceil(ids.length / 3));
    expect(rows.map((r) => r.ListingKey).sort()).toEqual([...ids].sort());
    const withPhotos = rows.filter((r) => (r.Media as Row[]).length > 0);
    expect(withPhotos.map((r) => r.ListingKey).sort()).toEqual(ids.slice(0, 2).sort());
    for (const row of withPhotos) {
      const media = row.Media as Row[];
      expect(media.map((m) => m.Order)).toEqual([0, 1]);
      const image = await fetch(String(media[0].MediaURL));
      expect(image.status).toBe(200);
      expect(image.headers.get('content-type')).toBe('image/jpeg');
    }
  });
});
