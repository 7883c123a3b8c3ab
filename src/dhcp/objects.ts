/**
 * The objects a DHCP lease is in the API server (ADR 0009, 0011): an entry
 * address → MAC in its lease block's object (or, for a static reservation, an
 * entry `dhcp-<mac>: <ip>` in the DHCP pool's status.indexes) — written before
 * the ACK, the durable part — then an IPClaim `dhcp-<mac>`, labelled as a DHCP
 * lease and annotated with the MAC, client id, hostname and expiry, and an
 * IPAddress named as IPAM names every address; and the DHCPLeaseBlock object
 * itself. Pure conversions.
 */
import { formatIp, type IpAddress } from '../core/ip.js';
import { tryParseMac, type Mac } from '../core/mac.js';
import type { KubeObject } from '../core/object-meta.js';
import { addressName } from '../ipam/naming.js';
import { DHCP_INDEX_PREFIX, DHCP_LEASE_LABEL, METAL3_IPAM_VERSION, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { BLOCK_POOL_LABEL, LEASE_BLOCK_VERSION, blockName, type DhcpLeaseBlockObject } from './blocks.js';
import type { Lease } from './types.js';

export const LEASE_ANNOTATIONS = {
  mac: 'dhcp.ironet.io/mac',
  clientId: 'dhcp.ironet.io/client-id',
  hostname: 'dhcp.ironet.io/hostname',
  expires: 'dhcp.ironet.io/expires',
} as const;

/** The MAC in a `dhcp-<12 hex digits>` index key, or undefined for any other key. */
export function macOfKey(key: string): Mac | undefined {
  if (!key.startsWith(DHCP_INDEX_PREFIX)) return undefined;
  const hex = key.slice(DHCP_INDEX_PREFIX.length);
  if (!/^[0-9a-f]{12}$/.test(hex)) return undefined;
  return tryParseMac((hex.match(/../g) ?? []).join(':'));
}

/**
 * A lease as a new holder loads it: its MAC and address from the durable
 * record (a block's object or a `dhcp-<mac>` pool entry), the rest from its
 * IPClaim when that was written.
 */
export function leaseFromRecord(mac: Mac, ip: IpAddress, claim: IpClaimObject | undefined, defaults: { nowMs: number; leaseSeconds: number }): Lease {
  const a = claim?.metadata.annotations ?? {};
  const stored = Date.parse(a[LEASE_ANNOTATIONS.expires] ?? '');
  // A renewal is ACKed from memory while more than half of the stored lease is left, so the client may
  // hold an expiry up to a whole lease from the last ACK, which is never later than now: a new holder keeps
  // every lease a whole lease from now (never loses one; a departed client's lease ends a lease later).
  const wholeLease = defaults.nowMs + defaults.leaseSeconds * 1000;
  const storedExpiresAtMs = Number.isFinite(stored) ? stored : wholeLease;
  return { mac, ip, expiresAtMs: Math.max(storedExpiresAtMs, wholeLease), storedExpiresAtMs, clientId: a[LEASE_ANNOTATIONS.clientId], hostname: a[LEASE_ANNOTATIONS.hostname] };
}

export function leaseClaim(pool: IpPoolObject, key: string, lease: Lease): IpClaimObject {
  return {
    apiVersion: METAL3_IPAM_VERSION,
    kind: 'IPClaim',
    metadata: {
      name: key,
      namespace: pool.metadata.namespace,
      labels: { [DHCP_LEASE_LABEL]: 'true' },
      annotations: leaseAnnotations(lease),
    },
    spec: { pool: { name: pool.metadata.name } },
  };
}

export function leaseAnnotations(lease: Lease): Record<string, string> {
  return {
    [LEASE_ANNOTATIONS.mac]: lease.mac,
    [LEASE_ANNOTATIONS.expires]: new Date(lease.storedExpiresAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(lease.clientId ? { [LEASE_ANNOTATIONS.clientId]: lease.clientId } : {}),
    ...(lease.hostname ? { [LEASE_ANNOTATIONS.hostname]: lease.hostname } : {}),
  };
}

export function leaseAddress(pool: IpPoolObject, claim: KubeObject, ip: IpAddress, prefix: number | undefined): IpAddressObject {
  const text = formatIp(ip);
  return {
    apiVersion: METAL3_IPAM_VERSION,
    kind: 'IPAddress',
    metadata: {
      name: addressName(pool.spec?.namePrefix ?? pool.metadata.name ?? 'dhcp', text),
      namespace: pool.metadata.namespace,
      labels: { [DHCP_LEASE_LABEL]: 'true' },
      ownerReferences: [
        { apiVersion: METAL3_IPAM_VERSION, kind: 'IPPool', name: pool.metadata.name ?? '', uid: pool.metadata.uid ?? '' },
        { apiVersion: METAL3_IPAM_VERSION, kind: 'IPClaim', name: claim.metadata.name ?? '', uid: claim.metadata.uid ?? '' },
      ],
    },
    spec: {
      address: text,
      pool: { name: pool.metadata.name, namespace: pool.metadata.namespace },
      claim: { name: claim.metadata.name, namespace: pool.metadata.namespace },
      ...(prefix ? { prefix } : {}),
    },
  };
}

/** The (empty) DHCPLeaseBlock object of block `id` of `pool`, owned by the pool. */
export function leaseBlock(pool: IpPoolObject, id: string): DhcpLeaseBlockObject {
  const name = pool.metadata.name ?? '';
  return {
    apiVersion: LEASE_BLOCK_VERSION,
    kind: 'DHCPLeaseBlock',
    metadata: {
      name: blockName(name, id),
      namespace: pool.metadata.namespace,
      labels: { [BLOCK_POOL_LABEL]: name },
      ownerReferences: [{ apiVersion: METAL3_IPAM_VERSION, kind: 'IPPool', name, uid: pool.metadata.uid ?? '' }],
    },
    spec: { pool: name, releasing: false, leases: {} },
  };
}
