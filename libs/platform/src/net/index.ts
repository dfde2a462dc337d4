import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Outbound targets a client names (webhook receivers, feed sources): refused when they are private, loopback or
 * link-local, by their form and again by the addresses they resolve to when connecting, unless allowed (tests,
 * local development).
 */

// Addresses an outbound call (a webhook, a feed source) may never reach unless private targets are allowed: this host, private networks,
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

/** Why a URL may not be an outbound target before any address is known, or null when its form is fine. */
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

/** A target refused before or while connecting. */
export class TargetRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefused';
  }
}

/**
 * Resolves like `dns.lookup`, then refuses private, loopback and link-local answers. The socket
 * connects to the address checked here, so a name that changes its answer between the check and
 * the connection (DNS rebinding) cannot slip through.
 */
export function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refusal = addressRefusal(
        addresses.map((a) => a.address),
        allowPrivate,
      );
      if (refusal) return callback(new TargetRefused(`${hostname} ${refusal}`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** Why a URL may not be reached: its form, then the addresses its host resolves to; null when it may. */
export async function targetRefusal(url: string, allowPrivate: boolean): Promise<string | null> {
  const form = urlRefusal(url, allowPrivate);
  if (form) return form;
  const { hostname } = new URL(url);
  return new Promise((resolve) =>
    checkedLookup(allowPrivate)(hostname.replace(/^\[|\]$/g, ''), { all: true }, (err) =>
      resolve(err instanceof TargetRefused ? err.message : null),
    ),
  );
}
