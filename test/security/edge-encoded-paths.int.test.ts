import { listingBody } from '@estate/testing';
import { ADMIN, listingCount, startProduct, type EdgeProduct } from './edge-product';

/** Spellings of `/v1/listings` a lenient router or proxy may take for it. */
const SPELLINGS = [
  '/%761/listings',
  '/%76%31/listings',
  '/v%31/listings',
  '/%56%31/listings',
  '/v1/%6cistings',
  '/V1/listings',
  '//v1/listings',
  '/v1//listings',
  '/%2fv1/listings',
  '/%25761/listings',
  '/v1/listings/',
];

describe('reaching /v1 routes by another spelling of their path', () => {
  let edge: EdgeProduct;
  beforeAll(async () => {
    edge = await startProduct();
  });
  afterAll(async () => {
    await edge?.close();
  });

  it.each(SPELLINGS)('GET %s without a key is refused 401 like /v1/listings, limits and all', async (url) => {
    const res = await edge.call(null, { method: 'GET', url });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'unauthorized', requestId: res.headers['x-request-id'] });
    expect(res.headers['ratelimit-limit']).toBe('1000');
    expect(res.body).not.toContain('"items"');
  });

  it.each(SPELLINGS)('POST %s with a wrong key creates nothing', async (url) => {
    const res = await edge.call('ek_wrong_0000000000000000000000000000', {
      method: 'POST',
      url,
      payload: listingBody({ externalId: `ENC-${url}` }),
    });
    expect(res.statusCode).toBe(401);
    expect(await listingCount(edge)).toBe(0);
  });

  it('the decoded spellings that do reach the listings route serve the caller whose key they carry', async () => {
    const res = await edge.call(ADMIN, { method: 'GET', url: '/%761/listings' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ items: [], total: 0 });
  });
});
