import { BlockList, isIP } from 'node:net';

/** A CIDR (`10.0.0.0/8`, `fd00::/8`), an IP, a host name, or `*.example.com` (any subdomain). */
export function isHostPattern(p: string): boolean {
  const slash = p.indexOf('/');
  if (slash >= 0) {
    const bits = Number(p.slice(slash + 1));
    const family = isIP(p.slice(0, slash));
    return family !== 0 && Number.isInteger(bits) && bits >= 0 && bits <= (family === 4 ? 32 : 128);
  }
  return (
    isIP(p) !== 0 ||
    /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(p)
  );
}

class HostSet {
  private readonly ips = new BlockList();
  private readonly names: string[] = [];
  readonly empty: boolean;

  constructor(patterns: readonly string[]) {
    this.empty = patterns.length === 0;
    for (const p of patterns) {
      const slash = p.indexOf('/');
      const ip = slash >= 0 ? p.slice(0, slash) : p;
      const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
      if (slash >= 0) this.ips.addSubnet(ip, Number(p.slice(slash + 1)), family);
      else if (isIP(p)) this.ips.addAddress(p, family);
      else this.names.push(p.toLowerCase());
    }
  }

  hasName(host: string): boolean {
    const h = host.toLowerCase().replace(/\.$/, '');
    return this.names.some((n) => (n.startsWith('*.') ? h.endsWith(n.slice(1)) : h === n));
  }

  /** The address, and the IPv4 address an IPv6 one carries (mapped, compatible, NAT64), either on the list. */
  hasAddress(address: string): boolean {
    const v4 = embeddedIPv4(address);
    if (v4 !== null && v4 !== address)
      return this.ips.check(v4, 'ipv4') || this.ips.check(address, 'ipv6');
    return this.ips.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
}

/** The eight 16-bit groups of a valid IPv6 address (a dotted IPv4 tail and a zone included). */
function ipv6Groups(address: string): number[] {
  let a = address.replace(/%.*$/, '');
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a);
  if (dotted) {
    const [b0, b1, b2, b3] = dotted.slice(2).map(Number);
    a = `${dotted[1]}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head, tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...zeros, ...t].map((g) => parseInt(g, 16));
}

/**
 * The IPv4 address a connection to this one reaches, in dotted form: itself for IPv4; for IPv6 the one it
 * embeds, whatever the spelling (WHATWG URLs write `[::ffff:0.0.0.0]` as `::ffff:0:0`): IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d` (not `::` and `::1`)
 * and NAT64 `64:ff9b::a.b.c.d`. null for any other IPv6 address.
 */
export function embeddedIPv4(address: string): string | null {
  const family = isIP(address.replace(/%.*$/, ''));
  if (family === 4) return address;
  if (family !== 6) return null;
  const g = ipv6Groups(address);
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const embeds =
    (zero(0, 5) && g[5] === 0xffff) || // mapped
    (zero(0, 4) && g[4] === 0xffff && g[5] === 0) || // translated
    (zero(0, 6) && !(g[6] === 0 && g[7] <= 1)) || // compatible
    (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)); // NAT64 well-known prefix
  return embeds ? `${g[6] >> 8}.${g[6] & 0xff}.${g[7] >> 8}.${g[7] & 0xff}` : null;
}

/**
 * Whom a client address stands for when requests are counted per address: an IPv4 address (also as
 * IPv6 spells it), or an IPv6 address's /64, the block one subscriber is given, so rotating through
 * its 2^64 addresses is one client, not a fresh count each (or a way to push the others' counts out).
 */
export function clientOf(address: string): string {
  const v4 = embeddedIPv4(address);
  if (v4 !== null || isIP(address.replace(/%.*$/, '')) !== 6) return v4 ?? address;
  const g = ipv6Groups(address);
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}

/** `0.0.0.0/8` and `::`, however spelled (mapped, compatible, NAT64): a connection there lands on this host. */
function reachesLoopback(address: string): boolean {
  const v4 = embeddedIPv4(address);
  if (v4 !== null) return v4.startsWith('0.');
  return isIP(address.replace(/%.*$/, '')) === 6 && ipv6Groups(address).every((x) => x === 0);
}

/**
 * The names a server answers to where a web page could reach it under a DNS name rebound to its address:
 * any IP address, `localhost` and `*.localhost` (browsers resolve those to the loopback themselves, never
 * through DNS), and the operator's names (host names or `*.example.com`).
 */
export class ServedNames {
  private readonly names: HostSet;

  constructor(names: readonly string[]) {
    this.names = new HostSet(names);
  }

  /** The name a request was addressed to (its `Host` header) when it is not one of these; else null. */
  refused(hostHeader: string | undefined): string | null {
    // HTTP/1.1 clients, browsers among them, always send one; an HTTP/1.0 client without it is no page
    if (hostHeader === undefined) return null;
    let name: string;
    try {
      name = new URL(`http://${hostHeader}`).hostname;
    } catch {
      return hostHeader;
    }
    const bare = name.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
    if (isIP(bare) !== 0 || bare === 'localhost' || bare.endsWith('.localhost')) return null;
    return this.names.hasName(bare) ? null : bare;
  }
}

/**
 * The operator's outbound policy for tool calls: a connection to `address` (resolved from `host`) is
 * refused when the name or the address is denied, or when an allow-list is set and neither is on it.
 */
export class HostPolicy {
  private readonly allowed: HostSet;
  private readonly denied: HostSet;

  constructor(allowed: readonly string[], denied: readonly string[]) {
    this.allowed = new HostSet(allowed);
    this.denied = new HostSet(denied);
  }

  /**
   * null when allowed; otherwise why not (names the host and the address, never anything else). A
   * connection to the unspecified address (`0.0.0.0`, `::`) reaches this host's loopback, so denying the
   * loopback denies it too.
   */
  refusal(host: string, address: string): string | null {
    const what = host === address ? address : `${host} (${address})`;
    const loopback = reachesLoopback(address);
    if (
      this.denied.hasName(host) ||
      this.denied.hasAddress(address) ||
      (loopback && (this.denied.hasAddress('127.0.0.1') || this.denied.hasAddress('::1')))
    )
      return `${what} is denied by the outbound host policy`;
    if (!this.allowed.empty && !this.allowed.hasName(host) && !this.allowed.hasAddress(address))
      return `${what} is not on the outbound host allow-list`;
    return null;
  }
}
