import { needsApiKey } from './api-paths';

describe('needsApiKey', () => {
  it('follows the matched route: every /v1 route needs a key, the public ones do not, whatever the URL said', () => {
    expect(needsApiKey('/v1/listings', '/%761/listings')).toBe(true);
    expect(needsApiKey('/v1/listings/:id', '/v1/listings/x')).toBe(true);
    expect(needsApiKey('/health/live', '/health/live?x=/v1/')).toBe(false);
    expect(needsApiKey('/files/:token/:rendition', '/files/t/large')).toBe(false);
    expect(needsApiKey('/docs', '/docs')).toBe(false);
  });

  it('judges an unmatched path by its canonical form: decoded, case-folded, slashes collapsed', () => {
    for (const url of ['/v1', '/v1/nothing', '/V1/listings', '//v1/listings', '/%76%31/x?y=1', '/%25761/x'])
      expect(needsApiKey(undefined, url)).toBe(true);
    for (const url of ['/', '/favicon.ico', '/v10/x', '/v1x', '/%zz/v1', '/health/nothing'])
      expect(needsApiKey(undefined, url)).toBe(false);
  });
});
