/**
 * The agent's pure decisions about Ironic pods on its node: which pod of a
 * ProvisioningNetwork it plumbs, the IPClaim that pod's address comes from,
 * the address that claim got, and the VIP unit's settings. Pure.
 */
import { formatCidr } from '../core/cidr.js';
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import { selectorMatches } from '../core/labels.js';
import type { KubeObject } from '../core/object-meta.js';
import type { IpAddressObject, IpClaimObject } from '../ipam/objects.js';
import { METAL3_IPAM_VERSION } from '../ipam/objects.js';
import { nadName } from './nad.js';
import { NETWORK_LABEL, type ProvisioningNetwork } from './network.js';
import { requestsNetwork } from './network-status.js';

export interface PodObject extends KubeObject {
  spec?: { nodeName?: string; hostNetwork?: boolean };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[] };
}

/** The label on a pod's address claim: the pod's name. */
export const POD_LABEL = 'ironet.io/pod';

/**
 * The Ironic pod of `network` on this node that the agent plumbs: selected by
 * the network's pod selector, asking Multus for its NAD, in its namespace (the
 * NAD's), not host-networked, not finished or being deleted; the oldest if
 * there are several (a rollout's old pod keeps the VIP until it goes).
 */
export function choosePod(network: ProvisioningNetwork, pods: readonly PodObject[], nodeName: string): PodObject | undefined {
  const candidates = pods.filter(
    (p) =>
      p.spec?.nodeName === nodeName &&
      p.metadata.namespace === network.namespace &&
      !p.metadata.deletionTimestamp &&
      p.spec?.hostNetwork !== true &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed' &&
      selectorMatches(network.ironicPodSelector, p.metadata.labels) &&
      requestsNetwork(p.metadata.annotations, network.namespace, network.namespace, nadName(network)),
  );
  candidates.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  return candidates[0];
}

/** Whether the pod reports Ready (its containers pass their readiness probes). */
export function podReady(pod: PodObject): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * The IPClaim a pod's provisioning address comes from: named after the pod (a
 * StatefulSet pod that comes back gets its address back), in the network's
 * pod pool, owned by the pod so the garbage collector releases it with the
 * pod even when the node (and its agent) is gone.
 */
export function podClaim(network: ProvisioningNetwork, pod: PodObject): IpClaimObject {
  return {
    apiVersion: METAL3_IPAM_VERSION,
    kind: 'IPClaim',
    metadata: {
      name: pod.metadata.name ?? '',
      namespace: network.namespace,
      labels: { [NETWORK_LABEL]: network.name, [POD_LABEL]: pod.metadata.name ?? '' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' }],
    },
    spec: { pool: { name: network.podPool } },
  };
}

export type ClaimedAddress =
  | { readonly kind: 'bound'; readonly ip: IpAddress; readonly prefix: number }
  | { readonly kind: 'waiting'; readonly reason: string };

/** What a pod's claim got: the address and prefix of its IPAddress, or why there is none yet. */
export function claimedAddress(network: ProvisioningNetwork, claim: IpClaimObject | undefined, address: IpAddressObject | undefined, ownerUid?: string): ClaimedAddress {
  if (!claim) return { kind: 'waiting', reason: 'the pod\'s IPClaim is not created yet' };
  if (claim.metadata.deletionTimestamp) return { kind: 'waiting', reason: `IPClaim ${claim.metadata.name} is being deleted (an earlier pod's); a new one is made once it is gone` };
  if (ownerUid !== undefined && !(claim.metadata.ownerReferences ?? []).some((r) => r.kind === 'Pod' && r.uid === ownerUid)) {
    return { kind: 'waiting', reason: `IPClaim ${claim.metadata.name} belongs to an earlier pod of that name; it is freed with that pod (owner reference), then claimed again` };
  }
  if (claim.status?.errorMessage) return { kind: 'waiting', reason: `IPAM could not give the pod an address from IPPool ${network.podPool}: ${claim.status.errorMessage}` };
  if (!claim.status?.address?.name) return { kind: 'waiting', reason: `waiting for IPAM to allocate the pod an address from IPPool ${network.podPool} (is ironet controller running?)` };
  const ip = tryParseIp(address?.spec?.address ?? '');
  if (!address || !ip) return { kind: 'waiting', reason: `IPAddress ${claim.status.address.name} is not readable yet` };
  const onNetwork = ip.family === 4 ? network.cidr : network.ipv6Cidr;
  const prefix = address.spec?.prefix || onNetwork?.prefix;
  if (!prefix) return { kind: 'waiting', reason: `IPAddress ${claim.status.address.name} has no prefix and the network no ${ip.family === 4 ? 'spec.cidr' : 'spec.ipv6Cidr'}` };
  return { kind: 'bound', ip, prefix };
}

/** Every VIP Lease's name starts with it (`ironet-vip-<network>`, `ironet-vip6-<network>`, and VIP mode's `ironet-vip-<vip>`). */
export const VIP_LEASE_PREFIX = 'ironet-vip';

/** The VIP Lease of a network (one per network and family, in its namespace). */
export function vipLeaseName(network: Pick<ProvisioningNetwork, 'name'>): string {
  return `${VIP_LEASE_PREFIX}-${network.name}`;
}

/** The Lease of a dual-stack network's IPv6 VIP (an IPv6-only network's VIP uses vipLeaseName). */
export function vip6LeaseName(network: Pick<ProvisioningNetwork, 'name' | 'vip4'>): string {
  return network.vip4 === undefined ? vipLeaseName(network) : `${VIP_LEASE_PREFIX}6-${network.name}`;
}

/**
 * What a network's VIP unit is built from; when it changes (another pod, a
 * recreated sandbox, a new VIP or timings) the running unit steps down and a
 * new one starts.
 */
export function unitFingerprint(network: ProvisioningNetwork, pod: PodObject, netnsId: string, iface: string): string {
  return JSON.stringify([pod.metadata.uid, netnsId, iface, network.vip4 && formatIp(network.vip4), network.vip6 && formatIp(network.vip6), formatCidr(network.cidr), network.election, network.dhcpPool, network.dhcp]);
}
