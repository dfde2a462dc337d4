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
  ['64:ff9b:1::', 48],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** The eight 16-bit groups of an IPv6 address, however it is spelt (zero runs, a dotted IPv4 tail, a zone). */
function ipv6Groups(address: string): number[] {
  // The URL parser writes every IPv6 spelling one way: hex groups, `::` for the longest zero run.
  const canonical = new URL(`http://[${address.replace(/%.*$/, '')}]`).hostname.slice(1, -1);
  const [head, tail] = canonical.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => parseInt(g, 16));
}

const dotted = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address carries, where a packet to it reaches that IPv4 host: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), 6to4 (`2002:aabb:ccdd::/48`) and a Teredo
 * client (`2001:0::/32`, the last 32 bits inverted). IPv4-compatible (`::a.b.c.d`, deprecated) counts
 * as 0.0.0.0, refused whatever it carries.
 */
function embeddedIPv4(g: readonly number[]): string | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return dotted(g[6], g[7]);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return dotted(g[6], g[7]);
  if (zero(0, 6)) return '0.0.0.0';
  if (g[0] === 0x2002) return dotted(g[1], g[2]);
  if (g[0] === 0x2001 && g[1] === 0) return dotted(g[6] ^ 0xffff, g[7] ^ 0xffff);
  return null;
}

/** True for an address on the public internet. An IPv6 address that carries an IPv4 one is judged by both. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return !blocked.check(address, 'ipv4');
  const v4 = embeddedIPv4(ipv6Groups(address));
  if (v4 !== null && !isPublicAddress(v4)) return false;
  return !blocked.check(address.replace(/%.*$/, ''), 'ipv6');
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
  // `localhost.` is `localhost`: a trailing dot only makes a name fully qualified.
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
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
