import { ADMIN, startProduct, type EdgeProduct } from './edge-product';

interface KeyPage {
  items: { id: string; name: string }[];
  nextCursor: string | null;
  total: number;
}

describe('GET /v1/api-keys, paged, under attack', () => {
  let edge: EdgeProduct;
  let made: { id: string; secret: string }[];
  let agentSecret: string;

  beforeAll(async () => {
    edge = await startProduct();
    made = [];
    for (let i = 0; i < 5; i++) {
      const res = await edge.call(ADMIN, {
        method: 'POST',
        url: '/v1/api-keys',
        payload: { name: `feed ${i}`, role: 'integration' },
      });
      made.push(res.json());
    }
    const agent = await edge.call(ADMIN, {
      method: 'POST',
      url: '/v1/agents',
      payload: { name: 'Ann Agent', email: 'ann@example.com' },
    });
    const key = await edge.call(ADMIN, {
      method: 'POST',
      url: '/v1/api-keys',
      payload: { name: 'agent', role: 'agent', agentId: agent.json().id },
    });
    agentSecret = key.json().secret;
  });
  afterAll(async () => {
    await edge?.close();
  });

  const page = async (query: string, key = ADMIN) => edge.call(key, { method: 'GET', url: `/v1/api-keys${query}` });
  const everyKey = async (): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await page(`?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      const body = res.json() as KeyPage;
      ids.push(...body.items.map((k) => k.id));
      cursor = body.nextCursor;
    } while (cursor);
    return ids;
  };

  it('walks every live key once, oldest first, in pages of `limit`, with the total and no secret', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await page(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode).toBe(200);
      const body = res.json() as KeyPage;
      expect(body.total).toBe(7);
      expect(body.items.length).toBeLessThanOrEqual(2);
      for (const k of made) expect(res.body).not.toContain(k.secret);
      expect(res.body).not.toContain('hash');
      seen.push(...body.items.map((k) => k.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(7);
    expect(seen).toEqual(expect.arrayContaining(made.map((k) => k.id)));
    const first = (await page('')).json() as KeyPage;
    expect(first.items.map((k) => k.id)).toEqual(seen.slice(0, 20));
    expect(first.nextCursor).toBeNull();
  });

  it('refuses an edited, forged or foreign cursor (400 invalid_cursor) and a limit outside 1..100 (422)', async () => {
    const before = await everyKey();
    const { nextCursor } = (await page('?limit=1')).json() as KeyPage;
    const [body, tag] = nextCursor!.split('.');
    const forged = Buffer.from(JSON.stringify({ v: { $ne: null }, id: 'x' })).toString('base64url');
    for (const cursor of [`${forged}.${tag}`, `${body}.${tag.slice(0, -2)}AA`, forged, 'nonsense', `${nextCursor}.x`]) {
      const res = await page(`?cursor=${encodeURIComponent(cursor)}`);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'invalid_cursor', requestId: res.headers['x-request-id'] });
    }
    for (const query of ['?limit=0', '?limit=101', '?limit=abc', '?secret=1']) {
      const res = await page(query);
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('validation_failed');
    }
    expect(await everyKey()).toEqual(before);
  });

  it('refuses keys that are not admin (403, before the query is looked at) and shows them nothing', async () => {
    for (const key of [made[0].secret, agentSecret]) {
      for (const query of ['', '?limit=0', '?cursor=nonsense']) {
        const res = await page(query, key);
        expect(res.statusCode).toBe(403);
        expect(res.json().code).toBe('forbidden');
        expect(res.body).not.toContain('"items"');
      }
    }
  });
});
