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
import { METAL3_IPAM_VERSION, REQUESTED_IP_ANNOTATION } from '../ipam/objects.js';
import { nadName } from './nad.js';
import { IRONET_API_VERSION, NETWORK_LABEL, PROVISIONING_NETWORK_KIND, type ProvisioningNetwork } from './network.js';
import { NETWORKS_ANNOTATION, requestsNetwork } from './network-status.js';

export interface PodContainerStatus {
  name?: string;
  started?: boolean;
  restartCount?: number;
  state?: { running?: object; waiting?: { reason?: string }; terminated?: object };
}

export interface PodEnvVar {
  name?: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath?: string }; [source: string]: unknown };
}

/** The downward-API fields that are the pod's or node's own address (ironic-standalone-operator's PROVISIONING_IP). */
const OWN_ADDRESS_FIELDS = new Set(['status.podIP', 'status.podIPs', 'status.hostIP', 'status.hostIPs']);

export interface PodObject extends KubeObject {
  spec?: { nodeName?: string; hostNetwork?: boolean; containers?: { name?: string; env?: PodEnvVar[] }[] };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[]; containerStatuses?: PodContainerStatus[] };
}

/** The label on a pod's address claim: the pod's name. */
export const POD_LABEL = 'ironet.io/pod';

/**
 * The network's Ironic pods: those its selector picks in its namespace (the
 * NAD's), scheduled (to `nodeName` when given), not finished or being
 * deleted. The one reading of "selected" for the agent's choice, its
 * problems and the controller's census.
 */
export function selectedIronicPods(network: ProvisioningNetwork, pods: readonly PodObject[], nodeName?: string): PodObject[] {
  return pods.filter(
    (p) =>
      p.metadata.namespace === network.namespace &&
      (nodeName === undefined ? (p.spec?.nodeName ?? '') !== '' : p.spec?.nodeName === nodeName) &&
      !p.metadata.deletionTimestamp &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed' &&
      selectorMatches(network.ironicPodSelector, p.metadata.labels),
  );
}

/** Whether ironet plumbs a selected pod at all: it asks Multus for the network's NAD and is not on the host network. */
export function plumbable(network: ProvisioningNetwork, p: PodObject): boolean {
  return p.spec?.hostNetwork !== true && requestsNetwork(p.metadata.annotations, network.namespace, network.namespace, nadName(network));
}

/**
 * The Ironic pod of `network` on this node that the agent plumbs: selected
 * and plumbable; the oldest if there are several (a rollout's old pod keeps
 * the VIP until it goes).
 */
export function choosePod(network: ProvisioningNetwork, pods: readonly PodObject[], nodeName: string): PodObject | undefined {
  const candidates = selectedIronicPods(network, pods, nodeName).filter((p) => plumbable(network, p));
  candidates.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  return candidates[0];
}

/**
 * A second plumbable pod younger than this beside the chosen one is a
 * rollout's overlap, not a problem yet (a Deployment's surge pod runs beside
 * the old one until it is Ready or the old one goes).
 */
export const SECOND_POD_GRACE_MS = 120_000;

/** A pod the network's selector picks on this node that ironet cannot (or will not) plumb, and what to do about it. */
export interface IronicPodProblem {
  readonly pod: PodObject;
  readonly reason: 'IronicPodNotRequestingNetwork' | 'IronicPodHostNetwork' | 'SeveralIronicPods';
  readonly message: string;
}

/**
 * The bad input of the Ironic pods on this node, by the same reading as
 * choosePod: a selected pod that does not ask Multus for the network's NAD,
 * one on the host network, and a second (third, …) plumbable pod beside the
 * one chosen once it is older than `secondPodGraceMs` (only one Ironic pod
 * per node and network is plumbed; the caller's choosePod, when it has it).
 * `nowMs`: wall-clock time, for the pods' ages. Pure.
 */
export function ironicPodProblems(network: ProvisioningNetwork, pods: readonly PodObject[], nodeName: string, nowMs: number, chosen = choosePod(network, pods, nodeName), secondPodGraceMs: number = SECOND_POD_GRACE_MS): IronicPodProblem[] {
  const nad = `${network.namespace}/${nadName(network)}`;
  const live = selectedIronicPods(network, pods, nodeName);
  const problems: IronicPodProblem[] = [];
  const where = (p: PodObject): string => `pod ${p.metadata.name ?? '?'} on node ${nodeName}`;
  for (const p of live) {
    if (p.spec?.hostNetwork === true) {
      problems.push({ pod: p, reason: 'IronicPodHostNetwork', message: `${where(p)} matches spec.ironicPodSelector but uses hostNetwork: ironet plumbs only pods without it. Remove hostNetwork (and its dnsmasq and keepalived containers) and add ${NETWORKS_ANNOTATION}: ${nad}, or narrow the selector` });
    } else if (!plumbable(network, p)) {
      problems.push({ pod: p, reason: 'IronicPodNotRequestingNetwork', message: `${where(p)} matches spec.ironicPodSelector but does not ask Multus for ${nad}: add the annotation ${NETWORKS_ANNOTATION}: ${nad} to its template (or narrow the selector); until then it gets no provisioning interface and no VIP` });
    }
  }
  for (const p of live) {
    if (!chosen || p === chosen || !plumbable(network, p)) continue;
    const age = nowMs - Date.parse(p.metadata.creationTimestamp ?? '');
    if (Number.isFinite(age) && age < secondPodGraceMs) continue;
    problems.push({ pod: p, reason: 'SeveralIronicPods', message: `${where(p)} is a second Ironic pod of this network there: ironet plumbs only the oldest, ${chosen.metadata.name ?? '?'}; ${p.metadata.name ?? '?'} waits until it goes (a rollout that waits for it to become Ready never ends). Run one Ironic pod per node (pod anti-affinity, or the Deployment strategy Recreate)` });
  }
  return problems;
}

/** Whether the pod reports Ready (its containers pass their readiness probes). */
export function podReady(pod: PodObject): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Whether the pod's VIP unit contends for the Lease, and why (for the log). */
export interface Candidacy {
  readonly candidate: boolean;
  readonly ready: boolean;
  readonly reason: string;
}

/**
 * Which run of a pod's containers this is: its UID and their restarts. A
 * container that restarts starts a new run (ironic-image waits for the VIP
 * again).
 */
export function podRun(pod: PodObject): string {
  const restarts = (pod.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0);
  return `${pod.metadata.uid ?? ''}/${restarts}`;
}

/**
 * Whether the plumbed pod is a VIP candidate (ADR 0022): once every container
 * runs (state running, or started), Ready or not. Ready cannot be the
 * precondition: with `PROVISIONING_IP=<VIP>` ironic-image waits for the VIP on
 * an interface before Ironic starts, so the pod becomes Ready only after it
 * holds the VIP. Ready stays a preference (`ready`, which the VIP unit passes
 * to the election: a Ready candidate takes a free Lease first), and a pod that
 * was Ready in this run of its containers (`wasReady`, see podRun) and lost it
 * is not a candidate until Ready again: its Ironic is running but failing its
 * probe, so it steps down for a healthy pod. A pod whose containers do not all
 * run (being created, crash-looping) is not a candidate.
 */
export function vipCandidacy(pod: PodObject, wasReady = false): Candidacy {
  const ready = podReady(pod);
  if (ready) return { candidate: true, ready, reason: 'the pod is Ready' };
  if (wasReady) return { candidate: false, ready, reason: 'the pod was Ready and lost it with its containers still running (its readiness probe fails): not a candidate until Ready again' };
  const statuses = pod.status?.containerStatuses ?? [];
  if (statuses.length === 0) return { candidate: false, ready, reason: 'the pod reports no running containers yet' };
  const stopped = statuses.filter((c) => !(c.state?.running !== undefined || c.started === true));
  if (stopped.length > 0) {
    const names = stopped.map((c) => `${c.name ?? '?'}${c.state?.waiting?.reason ? ` (${c.state.waiting.reason})` : ''}`).join(', ');
    return { candidate: false, ready, reason: `container(s) ${names} not running` };
  }
  return { candidate: true, ready, reason: 'every container runs (not Ready yet: Ironic may be waiting for the VIP)' };
}

/** How long a holder whose pod never became Ready keeps the VIP before it yields it once (a Ready pod elsewhere may take it). */
export const UNREADY_HOLDER_MS = 300_000;

/**
 * Whether a holding candidate that is not Ready yields the VIP now: it has
 * held it `heldForMs` (this term) for at least `graceMs` without its pod
 * becoming Ready. The agent sees only its own node, so it cannot know
 * whether a Ready pod waits elsewhere: it steps down for a moment (a Ready
 * candidate takes a free Lease at once, ADR 0022) and, if nobody did, takes
 * it back as a non-preferred candidate. With PROVISIONING_IP=<VIP> a pod is
 * Ready only after it holds the VIP; the grace (default 5 minutes) covers
 * Ironic's start. Pure.
 */
export function unreadyHolderYields(c: Candidacy, heldForMs: number | undefined, graceMs: number = UNREADY_HOLDER_MS): boolean {
  return c.candidate && !c.ready && heldForMs !== undefined && heldForMs >= graceMs;
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

/** The label of a claim that sets an address aside because another MAC uses it on the wire (its value: that MAC, dashes for colons). */
export const IN_USE_ON_WIRE_LABEL = 'ironet.io/in-use-on-wire';

/** The IPClaim name that sets `ip` aside in a network's pod pool (one per network and address; the name's length kept within 253). */
export function wireHeldClaimName(network: Pick<ProvisioningNetwork, 'name'>, ip: IpAddress): string {
  return `in-use-on-wire-${network.name.slice(0, 190)}-${formatIp(ip).replace(/[.:]/g, '-')}`;
}

/**
 * The IPClaim that sets `ip` aside in the network's pod pool because `mac`
 * answers for it on the wire: it asks for that very address (upstream's
 * ipAddress annotation), so no pod is given it while it is in use; owned by
 * the network (it goes with it). The agent that found it deletes it once
 * nothing answers for the address any more.
 */
export function wireHeldClaim(network: ProvisioningNetwork, ip: IpAddress, mac: string, nodeName: string, nowIso: string): IpClaimObject {
  return {
    apiVersion: METAL3_IPAM_VERSION,
    kind: 'IPClaim',
    metadata: {
      name: wireHeldClaimName(network, ip),
      namespace: network.namespace,
      labels: { [NETWORK_LABEL]: network.name, [IN_USE_ON_WIRE_LABEL]: mac.replace(/:/g, '-') },
      annotations: { [REQUESTED_IP_ANNOTATION]: formatIp(ip), 'ironet.io/seen-by': nodeName, 'ironet.io/seen-at': nowIso },
      ownerReferences: [{ apiVersion: IRONET_API_VERSION, kind: PROVISIONING_NETWORK_KIND, name: network.name, uid: network.uid }],
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
  // addresses (spec.dhcp.routers, dnsServers, relayedSubnets) hold bigints, which JSON cannot write as they are
  const bigints = (_key: string, v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v);
  return JSON.stringify([pod.metadata.uid, netnsId, iface, network.vip4 && formatIp(network.vip4), network.vip6 && formatIp(network.vip6), formatCidr(network.cidr), network.election, network.dhcpPool, network.dhcp6Pool, network.dhcp], bigints);
}

/** The env variables of ironic-image that settle the address in Ironic's URLs (all urlContract reads of a pod's env). */
export const IRONIC_ADDRESS_ENV = ['IRONIC_IP', 'PROVISIONING_IP', 'PROVISIONING_INTERFACE'] as const;

/**
 * What the agent keeps of a Pod (a pod's spec and status are large): what
 * choosePod, vipCandidacy and urlContract read. Pure.
 */
export function slimPod(p: PodObject): PodObject {
  const names: readonly string[] = IRONIC_ADDRESS_ENV;
  return {
    metadata: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid, labels: p.metadata.labels, annotations: p.metadata.annotations, creationTimestamp: p.metadata.creationTimestamp, deletionTimestamp: p.metadata.deletionTimestamp, resourceVersion: p.metadata.resourceVersion },
    spec: {
      nodeName: p.spec?.nodeName,
      hostNetwork: p.spec?.hostNetwork,
      containers: (p.spec?.containers ?? []).map((c) => ({
        name: c.name,
        env: (c.env ?? [])
          .filter((e) => names.includes(e.name ?? ''))
          .map((e) => ({ name: e.name, value: e.value, ...(e.valueFrom ? { valueFrom: e.valueFrom.fieldRef?.fieldPath ? { fieldRef: { fieldPath: e.valueFrom.fieldRef.fieldPath } } : {} } : {}) })),
      })),
    },
    status: {
      phase: p.status?.phase,
      conditions: (p.status?.conditions ?? []).map((c) => ({ type: c.type, status: c.status })),
      containerStatuses: (p.status?.containerStatuses ?? []).map((c) => ({
        name: c.name,
        started: c.started,
        restartCount: c.restartCount,
        state: { ...(c.state?.running ? { running: {} } : {}), ...(c.state?.waiting ? { waiting: { reason: c.state.waiting.reason } } : {}), ...(c.state?.terminated ? { terminated: {} } : {}) },
      })),
    },
  };
}

/** What the Ironic container's environment makes Ironic put in the URLs it hands to hosts. */
export type UrlContract =
  | { readonly kind: 'vip'; readonly variable: 'IRONIC_IP' | 'PROVISIONING_IP' }
  | { readonly kind: 'unknown'; readonly reason: string }
  | { readonly kind: 'wrong'; readonly reason: 'IronicURLsNamePodAddress' | 'IronicIPNotVIP' | 'IronicIPFromPodAddress'; readonly message: string };

/**
 * Which address Ironic (ironic-image's start scripts) puts in its URLs, read
 * from the env of the pod's Ironic container (the first container that sets
 * any of IRONIC_IP, PROVISIONING_IP, PROVISIONING_INTERFACE). ironic-image
 * takes IRONIC_IP as it is; else it waits for PROVISIONING_IP on an interface
 * and uses it; else it takes the first global address of PROVISIONING_INTERFACE,
 * which ironet makes the pod's own address: after a failover hosts would be
 * sent to a pod that no longer holds the VIP. Only a name that is the VIP
 * survives a failover. Pure.
 */
export function urlContract(pod: PodObject, vips: readonly IpAddress[]): UrlContract {
  const names: readonly string[] = IRONIC_ADDRESS_ENV;
  const container = (pod.spec?.containers ?? []).find((c) => (c.env ?? []).some((e) => names.includes(e.name ?? '')));
  if (!container) return { kind: 'unknown', reason: 'no container sets IRONIC_IP, PROVISIONING_IP or PROVISIONING_INTERFACE' };
  const env = new Map((container.env ?? []).map((e) => [e.name ?? '', e]));
  const vipList = vips.map(formatIp);
  const want = vipList.join(' or ');
  for (const variable of ['IRONIC_IP', 'PROVISIONING_IP'] as const) {
    const e = env.get(variable);
    if (!e || (e.value === undefined && e.valueFrom === undefined) || e.value === '') continue;
    if (e.value === undefined) {
      // ironic-standalone-operator with networking.disableHostNetwork: PROVISIONING_IP from status.podIP
      const field = e.valueFrom?.fieldRef?.fieldPath;
      if (!field || !OWN_ADDRESS_FIELDS.has(field)) return { kind: 'unknown', reason: `${variable} comes from valueFrom` };
      return {
        kind: 'wrong',
        reason: 'IronicIPFromPodAddress',
        message:
          `container ${container.name ?? '?'} of pod ${pod.metadata.name ?? '?'} takes ${variable} from ${field} (as ironic-standalone-operator does with networking.disableHostNetwork): ` +
          `Ironic's URLs would name the pod's own cluster address, which does not move with the VIP; set IRONIC_IP=${want} (docs/irso.md)`,
      };
    }
    const ip = tryParseIp(e.value.split('/')[0]!.replace(/^\[|\]$/g, ''));
    if (ip && vipList.includes(formatIp(ip))) return { kind: 'vip', variable };
    return {
      kind: 'wrong',
      reason: 'IronicIPNotVIP',
      message: `container ${container.name ?? '?'} of pod ${pod.metadata.name ?? '?'} sets ${variable}=${e.value}, not the VIP: Ironic's URLs would name an address that does not move with the VIP; set IRONIC_IP=${want}`,
    };
  }
  const iface = env.get('PROVISIONING_INTERFACE')?.value;
  return {
    kind: 'wrong',
    reason: 'IronicURLsNamePodAddress',
    message:
      `container ${container.name ?? '?'} of pod ${pod.metadata.name ?? '?'} sets PROVISIONING_INTERFACE${iface ? `=${iface}` : ''} without IRONIC_IP or PROVISIONING_IP: ` +
      `Ironic takes the first address of that interface, the pod's own address, for the URLs it hands to hosts, so after a failover hosts are sent to a pod that no longer holds the VIP; set IRONIC_IP=${want}`,
  };
}
