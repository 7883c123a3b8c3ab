/** Test doubles for src/dhcp6: an in-memory allocator over one range, implementing decide6's port and nothing more. */
import { formatIp, ipEquals, ipFromBigInt, parseIp, type IpAddress } from '../../src/core/ip.js';
import type { Allocator6View } from '../../src/dhcp6/decide.js';
import type { Binding6, Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { parseCidr } from '../../src/core/cidr.js';

export class FakeAllocator6 implements Allocator6View {
  private readonly start: bigint;
  private readonly end: bigint;
  readonly bindings = new Map<string, Binding6>();
  readonly offers = new Map<string, { ip: IpAddress; untilMs: number }>();
  /** Addresses (canonical text) taken by someone this server does not know (IPAM, another writer). */
  readonly taken = new Set<string>();

  constructor(first: string, last: string) {
    this.start = parseIp(first).value;
    this.end = parseIp(last).value;
  }

  bindingOf(key: string): Binding6 | undefined {
    return this.bindings.get(key);
  }

  inPool(ip: IpAddress): boolean {
    return ip.family === 6 && ip.value >= this.start && ip.value <= this.end;
  }

  isFreeFor(ip: IpAddress, key: string, nowMs: number): boolean {
    if (!this.inPool(ip) || this.taken.has(formatIp(ip))) return false;
    for (const [k, b] of this.bindings) if (k !== key && ipEquals(b.ip, ip)) return false;
    for (const [k, o] of this.offers) if (k !== key && o.untilMs > nowMs && ipEquals(o.ip, ip)) return false;
    return true;
  }

  choose(key: string, hint: IpAddress | undefined, nowMs: number): IpAddress | undefined {
    const bound = this.bindings.get(key);
    if (bound) return bound.ip;
    const offer = this.offers.get(key);
    if (offer && offer.untilMs > nowMs && this.isFreeFor(offer.ip, key, nowMs)) return offer.ip;
    if (hint && this.isFreeFor(hint, key, nowMs)) return hint;
    for (let v = this.start; v <= this.end; v++) {
      const ip = ipFromBigInt(6, v);
      if (this.isFreeFor(ip, key, nowMs)) return ip;
    }
    return undefined;
  }

  bind(b: Binding6): void {
    this.bindings.set(b.key, b);
    this.offers.delete(b.key);
  }

  offer(key: string, ip: IpAddress, untilMs: number): void {
    this.offers.set(key, { ip, untilMs });
  }
}

/** The server configuration the dhcp6 tests share: fd00:1::/64, boot URLs on fd00:1::2, rapid commit on, any MAC answered. */
export function testConfig6(serverDuid: Buffer): Dhcp6ServerConfig {
  return {
    serverDuid,
    prefix: parseCidr('fd00:1::/64'),
    dnsServers: [],
    leaseSeconds: 3600,
    offerHoldMs: 30_000,
    preference: 255,
    rapidCommit: true,
    boot: { efiX64Url: 'tftp://[fd00:1::2]/snponly-x86_64.efi', efiArm64Url: 'tftp://[fd00:1::2]/snponly-arm64.efi', ipxeScriptUrl: 'http://[fd00:1::2]:6180/boot.ipxe' },
    knownHostsOnly: false,
  };
}
