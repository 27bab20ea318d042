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

  hasAddress(address: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return this.ips.check(mapped[1], 'ipv4') || this.ips.check(address, 'ipv6');
    return this.ips.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
}

/** `0.0.0.0/8`, `::` and their IPv4-mapped forms: a connection there lands on this host. */
function reachesLoopback(address: string): boolean {
  const v4 = /^(?:::ffff:)?(\d+)\.\d+\.\d+\.\d+$/i.exec(address);
  if (v4) return v4[1] === '0';
  return isIP(address) === 6 && /^[0:]+$/.test(address);
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
