import { Writable } from 'node:stream';
import { createLogger } from '@estate/platform/logging';
import { ADMIN, startProduct, type EdgeProduct } from './edge-product';

describe('personal data in request logs', () => {
  let edge: EdgeProduct;
  const raw: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk, _enc, done) {
        raw.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    edge = await startProduct({ logLevel: 'info' }, createLogger({ service: 'embedded', level: 'info', destination }));
  });
  afterAll(async () => {
    await edge?.close();
  });

  it('a lead search, a refused one, and an email or phone anywhere in a URL never reach a log line', async () => {
    const captured = await edge.call(ADMIN, {
      method: 'POST',
      url: '/v1/leads',
      payload: { name: 'Private Person', email: 'private.person@ex.com', phone: '+15125550142', source: 'web' },
    });
    expect(captured.statusCode).toBe(201);
    const before = raw.length;
    const searches = [
      '/v1/leads?q=private.person@ex.com',
      '/v1/leads?q=private.person%40ex.com&limit=5&status=new',
      '/v1/leads?q=Private%20Person&sort=-score',
      '/v1/leads?q=%2B15125550142',
      '/v1/leads?q=(512)%20555-0142&minScore=oops',
      '/v1/listings?q=private.person@ex.com',
      '/v1/leads/private.person@ex.com',
    ];
    const answers = [];
    for (const [i, url] of searches.entries())
      answers.push(await edge.call(ADMIN, { method: 'GET', url, headers: { 'x-request-id': `pii-${i}` } }));
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 422, 200, 404]);
    expect(answers[0].json().total).toBe(1);

    const lines = raw
      .slice(before)
      .map((l) => JSON.parse(l) as { msg?: string; requestId?: string; req?: { url: string } });
    // Each request was logged, with its path and what says nothing about a person.
    const urls = lines.filter((l) => l.msg === 'incoming request').map((l) => l.req!.url);
    expect(urls).toEqual(
      expect.arrayContaining([
        '/v1/leads?q=[redacted]',
        '/v1/leads?q=[redacted]&limit=5&status=new',
        '/v1/leads?q=[redacted]&sort=-score',
        '/v1/listings?q=[redacted]',
        '/v1/leads/[redacted]',
      ]),
    );
    const written = raw.slice(before).join('\n');
    for (const personal of ['private.person', 'Private', '5125550142', '555-0142', '(512)'])
      expect(written).not.toContain(personal);
  });
});
