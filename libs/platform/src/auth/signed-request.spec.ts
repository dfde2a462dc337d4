import type { Identity } from '@estate/contracts/accounts';
import { NonceCache } from './nonce-cache';
import { bodyDigest, MAX_AGE_MS, signRequest, verifyRequest, type VerifyOptions } from './signed-request';

const CURRENT = 'current-secret-0123456789abcdef-0123456789';
const PREVIOUS = 'previous-secret-0123456789abcdef-012345678';
const who: Identity = { accountId: 'acc_1', keyId: 'key_1', role: 'admin', agentId: null };
const NOW = 1_800_000_000_000;
const body = JSON.stringify({ title: 'Flat' });

function sign(overrides: Partial<Parameters<typeof signRequest>[1]> = {}) {
  return signRequest(who, {
    caller: 'gateway',
    secret: CURRENT,
    method: 'POST',
    url: '/v1/listings?x=1',
    digest: bodyDigest(body),
    now: NOW,
    ...overrides,
  });
}

function verify(headers: Record<string, string>, overrides: Partial<VerifyOptions> = {}) {
  return verifyRequest(headers, {
    secrets: [CURRENT],
    callers: { gateway: '*', media: ['GET'] },
    nonces: new NonceCache(MAX_AGE_MS),
    method: 'POST',
    url: '/v1/listings?x=1',
    now: NOW,
    ...overrides,
  });
}

describe('signed internal requests', () => {
  it('accepts a fresh request and hands back the identity and the body digest it was signed with', () => {
    expect(verify(sign())).toEqual({ ok: true, identity: who, caller: 'gateway', digest: bodyDigest(body) });
  });

  it('carries the digest of the body it was signed over, so another body does not match', () => {
    const result = verify(sign());
    expect(result.ok && result.digest).toBe(bodyDigest(body));
    expect(result.ok && result.digest).not.toBe(bodyDigest(JSON.stringify({ title: 'Villa' })));
  });

  it('refuses a digest changed in the header', () => {
    const headers = sign();
    const forged = headers['x-estate-signature'].replace(/d=[^,]+/, `d=${bodyDigest('{"title":"Villa"}')}`);
    expect(verify({ ...headers, 'x-estate-signature': forged })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses another method, path or query than the signed ones', () => {
    expect(verify(sign(), { method: 'DELETE' })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verify(sign(), { url: '/v1/listings?x=2' })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verify(sign(), { url: '/v1/leads?x=1' })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses another identity under a captured signature', () => {
    const headers = sign();
    const other = Buffer.from(JSON.stringify({ ...who, accountId: 'acc_2' })).toString('base64url');
    expect(verify({ ...headers, 'x-estate-identity': other })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a request older than a minute, and one dated ahead of the clock', () => {
    expect(verify(sign({ now: NOW - MAX_AGE_MS - 1 }))).toEqual({ ok: false, reason: 'stale' });
    expect(verify(sign({ now: NOW - MAX_AGE_MS + 1000 })).ok).toBe(true);
    expect(verify(sign({ now: NOW + 60_000 }))).toEqual({ ok: false, reason: 'future' });
  });

  it('refuses a nonce seen before, even with a fresh signature', () => {
    const nonces = new NonceCache(MAX_AGE_MS);
    const first = sign({ nonce: 'nonce-0123456789abcdef' });
    expect(verify(first, { nonces }).ok).toBe(true);
    expect(verify(first, { nonces })).toEqual({ ok: false, reason: 'replayed' });
    expect(verify(sign({ nonce: 'nonce-0123456789abcdef', now: NOW + 1000 }), { nonces, now: NOW + 1000 })).toEqual({
      ok: false,
      reason: 'replayed',
    });
    expect(verify(sign({ nonce: 'nonce-fedcba9876543210' }), { nonces }).ok).toBe(true);
  });

  it('accepts the previous secret while it is configured, and refuses it once it is not', () => {
    const headers = sign({ secret: PREVIOUS });
    expect(verify(headers, { secrets: [CURRENT, PREVIOUS] }).ok).toBe(true);
    expect(verify(sign({ secret: PREVIOUS }), { secrets: [CURRENT] })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a secret it does not know', () => {
    expect(verify(sign({ secret: 'some-other-secret-0123456789abcdef-0123' }))).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('accepts only the callers the service trusts, with the methods they may use', () => {
    expect(verify(sign({ caller: 'media' }))).toEqual({ ok: false, reason: 'caller' });
    expect(verify(sign({ caller: 'media', method: 'GET' }), { method: 'GET' }).ok).toBe(true);
    expect(verify(sign({ caller: 'webhooks', method: 'GET' }), { method: 'GET' })).toEqual({
      ok: false,
      reason: 'caller',
    });
  });

  it('refuses missing or malformed headers', () => {
    expect(verify({})).toEqual({ ok: false, reason: 'missing' });
    expect(verify({ ...sign(), 'x-estate-signature': 't=1,v1=abc' })).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('NonceCache', () => {
  it('forgets a nonce once its request could no longer be accepted anyway', () => {
    const cache = new NonceCache(1000);
    expect(cache.claim('a', 0, 0)).toBe(true);
    expect(cache.claim('a', 0, 500)).toBe(false);
    expect(cache.claim('b', 1500, 1500)).toBe(true);
    expect(cache.size).toBe(1);
  });

  it('stays within its capacity without ever accepting a replay of a dropped nonce', () => {
    const cache = new NonceCache(60_000, 3);
    for (const [i, n] of ['a', 'b', 'c', 'd'].entries()) expect(cache.claim(n, 1000 + i, 2000)).toBe(true);
    expect(cache.size).toBe(3);
    // 'a' was dropped to make room: its timestamp is now below the floor, so its replay is refused.
    expect(cache.claim('a', 1000, 2001)).toBe(false);
    expect(cache.claim('e', 1004, 2001)).toBe(true);
  });
});
