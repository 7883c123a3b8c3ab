/**
 * The DHCP leases as the API server holds them (ADR 0009, 0011), read in one
 * place. A lease is durable in one of two records:
 * - an entry `address → MAC` in a DHCPLeaseBlock's `spec.leases` (the block
 *   belongs to the pool its label, else its `spec.pool`, names);
 * - a `dhcp-<mac>: <address>` entry of the pool's `status.indexes` (static
 *   reservations, and every lease written before blocks).
 * Its details (expiry, hostname) are on its IPClaim `dhcp-<mac>`, labelled
 * `ironet.io/dhcp-lease`, written after the ACK.
 *
 * Every reader (the DHCP server's pool holders, the controller's lease count,
 * `ironet status`, the lab, the tests) goes through these functions, so they
 * agree: MACs come out in the one canonical form (lowercase, colons) whatever
 * case was written, and an entry whose address or MAC does not parse is no
 * lease anywhere. Pure.
 */
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import { tryParseMac, type Mac } from '../core/mac.js';
import type { IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from './blocks.js';
import { LEASE_ANNOTATIONS, macOfKey } from './objects.js';

/** One lease in its durable record. */
export interface RecordedLease {
  readonly mac: Mac;
  readonly ip: IpAddress;
}

/** One lease as the API server holds it, with the details its claim adds. */
export interface CensusLease extends RecordedLease {
  /** The pool, `namespace/name`. */
  readonly pool: string;
  /** Where it is durable: a DHCPLeaseBlock (named), or a `dhcp-<mac>` entry of the pool itself. */
  readonly record: { readonly kind: 'block'; readonly block: string } | { readonly kind: 'poolEntry' };
  /** From its claim; undefined until the claim is written (or for a static reservation). */
  readonly expiresAtMs: number | undefined;
  readonly hostname: string | undefined;
}

/** The lease a pool's status.indexes entry records: only `dhcp-<mac>: <address>`; undefined for any other entry. */
export function leaseOfPoolEntry(key: string, value: string): RecordedLease | undefined {
  const mac = macOfKey(key);
  const ip = mac ? tryParseIp(value) : undefined;
  return mac && ip ? { mac, ip } : undefined;
}

/** The leases of a DHCPLeaseBlock's `spec.leases` (address → MAC); entries that do not parse are left out. */
export function leasesOfBlock(leases: Readonly<Record<string, string>> | undefined): RecordedLease[] {
  const out: RecordedLease[] = [];
  for (const [text, macText] of Object.entries(leases ?? {})) {
    const ip = tryParseIp(text);
    const mac = tryParseMac(macText);
    if (ip && mac) out.push({ ip, mac });
  }
  return out;
}

/** The pool (`namespace/name`) a DHCPLeaseBlock belongs to: its label, else its spec.pool. */
export function poolOfBlock(b: DhcpLeaseBlockObject): string {
  return `${b.metadata.namespace ?? ''}/${b.metadata.labels?.[BLOCK_POOL_LABEL] ?? b.spec?.pool ?? ''}`;
}

export interface CensusInput {
  readonly pools: readonly IpPoolObject[];
  readonly blocks: readonly DhcpLeaseBlockObject[];
  /** The lease claims (label ironet.io/dhcp-lease), for expiry and hostname; optional. */
  readonly claims?: readonly IpClaimObject[];
}

/** Every lease of the given pools and blocks, in address order (IPv4 first). */
export function leaseCensus(input: CensusInput): CensusLease[] {
  const claimOf = new Map<string, IpClaimObject>();
  for (const c of input.claims ?? []) {
    const mac = tryParseMac(c.metadata.annotations?.[LEASE_ANNOTATIONS.mac] ?? '');
    if (mac) claimOf.set(`${c.metadata.namespace ?? ''}/${mac}`, c);
  }
  const details = (namespace: string, mac: Mac): Pick<CensusLease, 'expiresAtMs' | 'hostname'> => {
    const a = claimOf.get(`${namespace}/${mac}`)?.metadata.annotations ?? {};
    const expires = Date.parse(a[LEASE_ANNOTATIONS.expires] ?? '');
    return { expiresAtMs: Number.isNaN(expires) ? undefined : expires, hostname: a[LEASE_ANNOTATIONS.hostname] };
  };
  const out: CensusLease[] = [];
  for (const b of input.blocks) {
    const namespace = b.metadata.namespace ?? '';
    const pool = poolOfBlock(b);
    for (const l of leasesOfBlock(b.spec?.leases)) out.push({ ...l, pool, record: { kind: 'block', block: b.metadata.name ?? '' }, ...details(namespace, l.mac) });
  }
  for (const p of input.pools) {
    const namespace = p.metadata.namespace ?? '';
    const pool = `${namespace}/${p.metadata.name ?? ''}`;
    for (const [key, value] of Object.entries(p.status?.indexes ?? {})) {
      const l = leaseOfPoolEntry(key, value);
      if (l) out.push({ ...l, pool, record: { kind: 'poolEntry' }, ...details(namespace, l.mac) });
    }
  }
  return out.sort((a, b) => a.ip.family - b.ip.family || (a.ip.value < b.ip.value ? -1 : a.ip.value > b.ip.value ? 1 : 0));
}

/** Leases per pool (`namespace/name`). */
export function leasesPerPool(census: readonly CensusLease[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of census) out.set(l.pool, (out.get(l.pool) ?? 0) + 1);
  return out;
}

/**
 * MAC → leased address (text). A MAC with two leases (a move whose removal
 * was never written) shows its block lease over a pool entry, else its last
 * in address order.
 */
export function addressByMac(census: readonly CensusLease[]): Map<Mac, string> {
  const out = new Map<Mac, string>();
  for (const kind of ['poolEntry', 'block'] as const) for (const l of census) if (l.record.kind === kind) out.set(l.mac, formatIp(l.ip));
  return out;
}
