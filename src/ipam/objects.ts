/**
 * The wire shapes of the objects IPAM reads and writes, as the upstream CRDs
 * define them (ipam.metal3.io/v1alpha1 and ipam.cluster.x-k8s.io/v1beta2), and
 * the fixed strings that make us a drop-in for metal3 ip-address-manager.
 */
import type { KubeObject } from '../core/object-meta.js';
import type { Condition } from '../core/conditions.js';
import { tryParseIp, type IpAddress } from '../core/ip.js';

export const METAL3_IPAM_GROUP = 'ipam.metal3.io';
export const METAL3_IPAM_VERSION = 'ipam.metal3.io/v1alpha1';
export const CAPI_IPAM_VERSION = 'ipam.cluster.x-k8s.io/v1beta2';

export const FINALIZERS = {
  pool: 'ippool.ipam.metal3.io',
  claim: 'ipclaim.ipam.metal3.io',
  address: 'ipaddress.ipam.metal3.io',
  capiClaim: 'ipam.metal3.io/ipaddressclaim',
  capiAddress: 'ipam.metal3.io/ipaddress',
} as const;

/** Annotation on an IPClaim / IPAddressClaim asking for one specific address. */
export const REQUESTED_IP_ANNOTATION = 'ipAddress';
/** Pool annotation (CAPI): while present, the pool is left alone. */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';
export const PROVIDER_LABEL = 'cluster.x-k8s.io/provider';
export const PROVIDER_LABEL_VALUE = 'ipam-metal3';

/**
 * preAllocations keys that reserve an address instead of pre-allocating it to a
 * claim: `reserved` or `reserved-<anything>` (e.g. `reserved-vip`). No claim,
 * not even one of that name, ever gets such an address.
 */
export function isReservationKey(key: string): boolean {
  return key === 'reserved' || key.startsWith('reserved-');
}

export interface PoolEntrySpec {
  start?: string;
  end?: string;
  subnet?: string;
  prefix?: number;
  gateway?: string;
  dnsServers?: string[];
}

export interface IpPoolObject extends KubeObject {
  spec?: {
    clusterName?: string;
    namePrefix?: string;
    pools?: PoolEntrySpec[];
    prefix?: number;
    gateway?: string;
    dnsServers?: string[];
    preAllocations?: Record<string, string>;
    allocationStrategy?: string;
  };
  status?: { indexes?: Record<string, string>; lastUpdated?: string };
}

export interface ObjectRef {
  name?: string;
  namespace?: string;
  kind?: string;
  apiVersion?: string;
  uid?: string;
}

export interface IpClaimObject extends KubeObject {
  spec?: { pool?: ObjectRef };
  status?: { address?: ObjectRef; errorMessage?: string };
}

export interface IpAddressObject extends KubeObject {
  spec?: {
    address?: string;
    pool?: ObjectRef;
    claim?: ObjectRef;
    prefix?: number;
    gateway?: string;
    dnsServers?: string[];
  };
}

export interface CapiIpAddressClaimObject extends KubeObject {
  spec?: { poolRef?: { apiGroup?: string; kind?: string; name?: string }; clusterName?: string };
  status?: { addressRef?: { name?: string }; conditions?: Condition[] };
}

export interface CapiIpAddressObject extends KubeObject {
  spec?: {
    address?: string;
    poolRef?: { apiGroup?: string; kind?: string; name?: string };
    claimRef?: { name?: string };
    prefix?: number;
    gateway?: string;
  };
}

/**
 * DHCP leases (src/dhcp) live in their pool as ordinary allocations, but the
 * DHCP server, not this controller, owns them: their status.indexes keys start
 * with DHCP_INDEX_PREFIX (`dhcp-<mac>`), and their IPClaims carry
 * DHCP_LEASE_LABEL. The controller counts them as used and never allocates,
 * binds, drops or releases them (ADR 0009).
 */
export const DHCP_INDEX_PREFIX = 'dhcp-';
export const DHCP_LEASE_LABEL = 'ironet.io/dhcp-lease';

export function isDhcpIndexKey(key: string): boolean {
  return key.startsWith(DHCP_INDEX_PREFIX);
}

/**
 * A DHCP lease block's reservation (ADR 0011): `dhcp-blk-<id>-<count>: <first>`
 * holds `count` consecutive addresses from `first` (at most
 * DHCP_BLOCK_MAX_ADDRESSES), so a block costs the pool one entry, not one per
 * address. The count is in the key because the IPPool CRD requires every
 * value to be a single address.
 */
export const DHCP_BLOCK_KEY_PREFIX = 'dhcp-blk-';
export const DHCP_BLOCK_MAX_ADDRESSES = 4096;
const BLOCK_KEY = /^dhcp-blk-([a-z0-9]{8})-([1-9][0-9]{0,3})$/;

/** A lease block's key: its block id and how many addresses it reserves; undefined for any other key. */
export function blockKeyParts(key: string): { readonly id: string; readonly count: number } | undefined {
  const m = BLOCK_KEY.exec(key);
  if (!m) return undefined;
  const count = Number(m[2]);
  return count <= DHCP_BLOCK_MAX_ADDRESSES ? { id: m[1]!, count } : undefined;
}

/**
 * The addresses an entry of status.indexes holds: its value's address, or,
 * for a lease block's key, `count` consecutive addresses from it (none when
 * that runs past the end of the address space). A value that does not parse
 * holds nothing.
 */
export function indexEntryAddresses(key: string, value: string): IpAddress[] {
  const ip = tryParseIp(value);
  if (!ip) return [];
  const count = key.startsWith(DHCP_BLOCK_KEY_PREFIX) ? blockKeyParts(key)?.count : undefined;
  if (count === undefined) return [ip];
  const last = ip.value + BigInt(count - 1);
  if (last >> BigInt(ip.family === 4 ? 32 : 128) !== 0n) return [];
  const out: IpAddress[] = [];
  for (let v = ip.value; v <= last; v++) out.push({ family: ip.family, value: v });
  return out;
}

/** A CAPI claim is ours when its poolRef names an ipam.metal3.io IPPool. */
export function isOurCapiPoolRef(ref: { apiGroup?: string; kind?: string } | undefined): boolean {
  return ref?.apiGroup === METAL3_IPAM_GROUP && ref.kind === 'IPPool';
}
