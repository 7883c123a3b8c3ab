/**
 * The DHCPv6 server's allocator (ADR 0035): DHCPv4's own Allocator
 * (src/dhcp/allocator.ts) over an IPv6 IPPool, seen through decide6's port.
 * A binding is a DHCPv4-shaped Lease — MAC, address, the DUID (hex) as its
 * client id — so the lease ledger, its lease blocks and its lease objects
 * (src/dhcp/ledger.ts, ADR 0009, 0011) make it durable in the API server
 * unchanged, written before the REPLY, and a new VIP holder loads it.
 *
 * Keys are `dhcp-<mac>` (duid.ts clientKeyOf): this first slice serves
 * clients whose MAC it can read (a DUID-LLT/LL, or an EUI-64 link-local
 * source — every PXE client seen: EDK2 and iPXE form their link-local from
 * the MAC). A `dhcp6-<digest>` key (no MAC) has no binding and gets no
 * address here: decide6 answers NoAddrsAvail. Pool iteration is the
 * Allocator's next-fit over ranges, never materialised, so a /64 pool costs
 * what a /24 does. Pure.
 */
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { Allocator } from '../dhcp/allocator.js';
import { macOfKey } from '../dhcp/objects.js';
import type { Lease } from '../dhcp/types.js';
import type { Allocator6View } from './decide.js';
import { DHCP6_KEY_PREFIX } from './duid.js';
import type { Binding6 } from './types.js';

/** What of the v4 Allocator the view uses. */
export type V4Allocator = Pick<Allocator, 'leaseOf' | 'choose' | 'isFreeFor' | 'inPool'>;

export class LeaseAllocator6 implements Allocator6View {
  /** `released`: the address a MAC last released, offered to it again when it names none and it is free (ADR 0037). */
  constructor(
    private readonly allocator: V4Allocator,
    private readonly released: (mac: Mac) => IpAddress | undefined = () => undefined,
  ) {}

  bindingOf(key: string): Binding6 | undefined {
    const mac = macOfKey(key);
    const lease = mac ? this.allocator.leaseOf(mac) : undefined;
    return lease ? bindingOfLease(lease) : undefined;
  }

  choose(key: string, hint: IpAddress | undefined, nowMs: number): IpAddress | undefined {
    const mac = macOfKey(key);
    return mac ? this.allocator.choose(mac, hint ?? this.released(mac), nowMs) : undefined;
  }

  isFreeFor(ip: IpAddress, key: string, nowMs: number): boolean {
    const mac = macOfKey(key);
    return mac !== undefined && this.allocator.isFreeFor(ip, mac, nowMs);
  }

  inPool(ip: IpAddress): boolean {
    return this.allocator.inPool(ip);
  }
}

/** A lease as decide6 sees it. The IAID is not stored (it is the REPLY's to echo, from the request). */
export function bindingOfLease(lease: Lease): Binding6 {
  return {
    key: `dhcp-${lease.mac.replaceAll(':', '')}`,
    duid: lease.clientId ?? '',
    iaid: undefined,
    mac: lease.mac,
    ip: lease.ip,
    expiresAtMs: lease.expiresAtMs,
    storedExpiresAtMs: lease.storedExpiresAtMs,
  };
}

/** The lease that makes `b` durable; undefined for a binding without a MAC (not served by this slice, see above). */
export function leaseOfBinding(b: Binding6): Lease | undefined {
  if (b.key.startsWith(DHCP6_KEY_PREFIX)) return undefined;
  const mac: Mac | undefined = b.mac ?? macOfKey(b.key);
  if (!mac) return undefined;
  return { mac, ip: b.ip, clientId: b.duid || undefined, expiresAtMs: b.expiresAtMs, storedExpiresAtMs: b.storedExpiresAtMs };
}
