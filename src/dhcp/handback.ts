/**
 * Handing the DHCP leases back to an allocator that knows nothing of lease
 * blocks (ADR 0021): ip-address-manager counts an address as taken only when
 * an IPAddress names it (or a `preAllocations` entry holds it); it rewrites
 * the pool's `status.indexes` from the IPAddresses and so drops every
 * `dhcp-blk-*` entry. A lease whose IPAddress the DHCP server had not written
 * yet (it writes them after the ACK, in the background) would be handed out
 * again. The plan: one IPAddress for every lease that has none, as the DHCP
 * server itself would write it. Pure.
 */
import { formatIp, ipEquals, tryParseIp } from '../core/ip.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { parsePool } from '../ipam/pool-spec.js';
import { leaseKey } from './allocator.js';
import type { DhcpLeaseBlockObject } from './blocks.js';
import { leaseCensus, type CensusLease } from './lease-census.js';
import { leaseAddress } from './objects.js';

export interface HandbackInput {
  readonly pools: readonly IpPoolObject[];
  readonly blocks: readonly DhcpLeaseBlockObject[];
  /** Every IPClaim of the namespaces concerned (the lease claims are found by name). */
  readonly claims: readonly IpClaimObject[];
  readonly addresses: readonly IpAddressObject[];
}

export interface HandbackStep {
  readonly lease: CensusLease;
  readonly address: IpAddressObject;
  readonly reason: string;
}

export interface HandbackConflict {
  readonly lease: CensusLease;
  /** The IPAddress that holds the lease's address for another claim. */
  readonly holder: string;
  readonly reason: string;
}

export interface HandbackPlan {
  /** IPAddresses to create. */
  readonly create: readonly HandbackStep[];
  /** Leases whose IPAddress exists already. */
  readonly kept: number;
  /** Leases whose address another claim's IPAddress holds: an operator decides (the plan writes nothing for them). */
  readonly conflicts: readonly HandbackConflict[];
}

export function planLeaseHandback(input: HandbackInput): HandbackPlan {
  const poolByRef = new Map(input.pools.map((p) => [`${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`, p]));
  const claimByRef = new Map(input.claims.map((c) => [`${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`, c]));
  const create: HandbackStep[] = [];
  const conflicts: HandbackConflict[] = [];
  let kept = 0;
  for (const lease of leaseCensus({ pools: input.pools, blocks: input.blocks })) {
    const pool = poolByRef.get(lease.pool);
    if (!pool) continue; // a block of a pool that is gone holds nothing any allocator reads
    const namespace = pool.metadata.namespace ?? '';
    const key = leaseKey(lease.mac);
    const holder = input.addresses.find((a) => a.metadata.namespace === namespace && a.spec?.pool?.name === pool.metadata.name && sameAddress(a.spec?.address, lease));
    if (holder) {
      if (holder.spec?.claim?.name === key) kept++;
      else conflicts.push({ lease, holder: holder.metadata.name ?? '', reason: `${formatIp(lease.ip)} is leased to ${lease.mac} but IPAddress ${holder.metadata.name ?? ''} gives it to claim ${holder.spec?.claim?.name ?? '(none)'}` });
      continue;
    }
    const claim = claimByRef.get(`${namespace}/${key}`);
    const prefix = parsePool(pool).spec?.entries.find((e) => e.family === lease.ip.family)?.prefix;
    // without its claim (not written yet) the address names the claim the lease will have, owned by the pool only
    const address = claim ? leaseAddress(pool, claim, lease.ip, prefix) : withoutClaimOwner(leaseAddress(pool, { metadata: { name: key } }, lease.ip, prefix));
    const recorded = lease.record.kind === 'block' ? `block ${lease.record.block}` : 'the pool\'s status';
    create.push({ lease, address, reason: `${formatIp(lease.ip)} is leased to ${lease.mac} (${recorded}) and no IPAddress names it${claim ? '' : '; its IPClaim was never written'}` });
  }
  return { create, kept, conflicts };
}

function sameAddress(text: string | undefined, lease: CensusLease): boolean {
  const ip = tryParseIp(text ?? '');
  return ip !== undefined && ipEquals(ip, lease.ip);
}

function withoutClaimOwner(a: IpAddressObject): IpAddressObject {
  return { ...a, metadata: { ...a.metadata, ownerReferences: (a.metadata.ownerReferences ?? []).filter((o) => o.kind !== 'IPClaim') } };
}
