import { BlockList, isIP } from 'node:net';

/** About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (the Standard Webhooks schedule): eight attempts in all. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((s) => s * 1000);

/** An endpoint failing this long without a success is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/** A receiver has this long to answer 2xx. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** `5000,300000` -> [5000, 300000]; null when it is not such a list. */
export function parseRetrySchedule(raw: string): number[] | null {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d{1,10}$/.test(p))) return null;
  return parts.map(Number);
}

export type AttemptOutcome = { state: 'succeeded' } | { state: 'pending'; nextAttemptAt: Date } | { state: 'failed' };

/** What follows an attempt: success ends it; a failure waits the next delay, or gives up when none is left. */
export function afterAttempt(ok: boolean, attempts: number, now: Date, scheduleMs: readonly number[]): AttemptOutcome {
  if (ok) return { state: 'succeeded' };
  const delay = scheduleMs[attempts - 1];
  if (delay === undefined) return { state: 'failed' };
  return { state: 'pending', nextAttemptAt: new Date(now.getTime() + delay) };
}

/** A 2xx answer is success; redirects are not followed (the receiver must give its final URL). */
export const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

// Addresses a webhook may never reach unless private targets are allowed: this host, private networks,
// link-local (cloud metadata), carrier-grade NAT, multicast, reserved and documentation ranges.
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** True for an address on the public internet. IPv4-mapped IPv6 addresses are judged as their IPv4 address. */
export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return isPublicAddress(mapped[1]);
  const family = isIP(address);
  if (family === 0) return false;
  return !blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Why a URL may not be a webhook target before any address is known, or null when its form is fine. */
export function urlRefusal(raw: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an https URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivate) return url.protocol === 'https:' || url.protocol === 'http:' ? null : 'must be an https URL';
  if (url.protocol !== 'https:') return 'must be an https URL';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal'))
    return 'must be a public host, not a local name';
  if (isIP(host) !== 0 && !isPublicAddress(host)) return 'must not be a private, loopback or link-local address';
  return null;
}

/** Why resolved addresses may not be reached, or null when they all may. */
export function addressRefusal(addresses: readonly string[], allowPrivate: boolean): string | null {
  if (allowPrivate) return null;
  const bad = addresses.find((a) => !isPublicAddress(a));
  return bad === undefined ? null : `resolves to a private, loopback or link-local address (${bad})`;
}

/** An endpoint failing since `failingSince` is disabled once this is true. */
export const shouldDisable = (failingSince: string | undefined, now: Date): boolean =>
  failingSince !== undefined && now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS;
