import { ApiKeyCache } from './key-cache';

const who = (keyId: string) => ({ accountId: 'acc_1', keyId, role: 'admin' as const, agentId: null });

describe('ApiKeyCache', () => {
  it('keeps a key for its time to live, then forgets it', () => {
    let now = 1000;
    const cache = new ApiKeyCache({ ttlMs: 500, now: () => now });
    cache.put('h1', who('key_1'), cache.generation);
    expect(cache.get('h1')).toEqual(who('key_1'));
    now += 499;
    expect(cache.get('h1')).toBeDefined();
    now += 1;
    expect(cache.get('h1')).toBeUndefined();
  });

  it('evicts a revoked key and refuses to cache a lookup that started before the revocation', () => {
    const cache = new ApiKeyCache({ ttlMs: 60_000 });
    cache.put('h1', who('key_1'), cache.generation);
    cache.put('h2', who('key_2'), cache.generation);
    const before = cache.generation;
    cache.evictKey('key_1');
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toEqual(who('key_2'));
    // A store read that began before the revocation may have seen the key still live.
    cache.put('h1', who('key_1'), before);
    expect(cache.get('h1')).toBeUndefined();
  });

  it('caches nothing when its time to live is 0, and holds at most maxEntries', () => {
    const off = new ApiKeyCache({ ttlMs: 0 });
    off.put('h1', who('key_1'), off.generation);
    expect(off.get('h1')).toBeUndefined();
    const small = new ApiKeyCache({ ttlMs: 60_000, maxEntries: 2 });
    for (const n of [1, 2, 3]) small.put(`h${n}`, who(`key_${n}`), small.generation);
    expect(small.get('h1')).toBeUndefined();
    expect(small.get('h3')).toBeDefined();
  });

  it('drops everything, and a lookup begun before, when the keys changed elsewhere', () => {
    let changed = false;
    const cache = new ApiKeyCache({ ttlMs: 60_000, changedElsewhere: () => changed });
    cache.put('h1', who('key_1'), cache.generation);
    cache.put('h2', who('key_2'), cache.generation);
    expect(cache.get('h1')).toEqual(who('key_1'));
    const before = cache.generation;
    changed = true;
    expect(cache.get('h2')).toBeUndefined();
    changed = false;
    expect(cache.get('h1')).toBeUndefined();
    cache.put('h1', who('key_1'), before);
    expect(cache.get('h1')).toBeUndefined();
    cache.put('h1', who('key_1'), cache.generation);
    expect(cache.get('h1')).toEqual(who('key_1'));
  });
});
