import { z } from 'zod';
import { ConfigError, envTrustProxy, parseEnv } from './index';

describe('TRUST_PROXY', () => {
  const schema = z.object({ TRUST_PROXY: envTrustProxy });
  const read = (value?: string) => parseEnv(schema, { TRUST_PROXY: value }).TRUST_PROXY;

  it('trusts no proxy when unset, a number of hops, or a list of addresses and ranges', () => {
    expect(read(undefined)).toBeUndefined();
    expect(read('2')).toBe(2);
    expect(read('10.0.0.0/8, loopback ,192.168.1.7')).toEqual(['10.0.0.0/8', 'loopback', '192.168.1.7']);
  });

  it('refuses anything else, naming the variable', () => {
    for (const bad of ['true', 'true; rm', '<script>', 'a b"c', 'proxy.example.com', ','])
      expect(() => read(bad)).toThrow(ConfigError);
  });
});
