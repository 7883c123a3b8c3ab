/**
 * `ironet pivot` decided without I/O: what a pivot's source and target must
 * look like before `clusterctl move`, what is copied to the target ahead of
 * it, and how each side's state reads while the handover runs (docs/pivot.md).
 *
 * The handover (spec.handover, src/network/network.ts effectiveRole): the
 * source network names itself by uid; clusterctl copies the spec to the target
 * under another uid, so the copy waits (HandoverPending) while the source
 * keeps the VIP and answers only the DHCP leases it holds. The source lets go
 * when clusterctl deletes it (its holder steps down: work, VIP, then the
 * Lease); then the handover is removed on the target and it takes over.
 *
 * A copy made before the move lets the target plumb its Ironic pods and follow
 * the leases early: clusterctl later finds it and updates it with the same
 * spec (it replaces an object that exists), so the copy must carry the spec
 * the source has, handover included.
 */
import type { KubeObject } from '../core/object-meta.js';
import type { IpPoolObject } from '../ipam/objects.js';
import { effectiveRole, parseNetwork, type ProvisioningNetworkObject } from '../network/network.js';

/** The labels clusterctl moves an object by (on the object or its CRD). */
export const MOVE_LABEL = 'clusterctl.cluster.x-k8s.io/move';
export const MOVE_HIERARCHY_LABEL = 'clusterctl.cluster.x-k8s.io/move-hierarchy';
/** The label clusterctl discovers a kind by (on its CRD). */
export const DISCOVERY_LABEL = 'clusterctl.cluster.x-k8s.io';

export interface Handover {
  readonly sourceUID: string;
  readonly source?: string;
  readonly target?: string;
}

/** The spec.handover the source gets: its own uid, and where each side is (for people). */
export function handoverOf(source: ProvisioningNetworkObject, where: { readonly source: string; readonly target: string }): Handover {
  return { sourceUID: source.metadata.uid ?? '', source: where.source, target: where.target };
}

/**
 * An object as a create on the other cluster: name, namespace, labels,
 * annotations and spec; nothing the server owns (uid, versions, status,
 * owners, finalizers, managed fields). `over` replaces parts of the spec.
 */
export function copyFor<T extends KubeObject & { spec?: object }>(obj: T, over: Partial<NonNullable<T['spec']>> = {}): T {
  const { name, namespace, labels, annotations } = obj.metadata;
  const kept = Object.fromEntries(Object.entries(annotations ?? {}).filter(([k]) => k !== 'kubectl.kubernetes.io/last-applied-configuration'));
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}), ...(Object.keys(kept).length > 0 ? { annotations: kept } : {}) },
    spec: { ...(obj.spec ?? {}), ...over },
  } as T;
}

/**
 * Whether clusterctl moves a pool (the source's DHCP pool and pod pool usually
 * have no owner): labelled to move, or owned by something (a Cluster's
 * hierarchy moves what it owns; an owner that does not move is the user's to
 * label). `missing`: neither — it must be labelled, or its lease blocks stay.
 */
export function poolMove(pool: IpPoolObject): 'labelled' | 'owned' | 'missing' {
  const labels = pool.metadata.labels ?? {};
  if (MOVE_LABEL in labels || MOVE_HIERARCHY_LABEL in labels) return 'labelled';
  return (pool.metadata.ownerReferences ?? []).length > 0 ? 'owned' : 'missing';
}

/** The pools a network names (pods, DHCP), by their field. */
export function poolsOf(network: ProvisioningNetworkObject): { readonly field: string; readonly name: string }[] {
  const pools: { field: string; name: string }[] = [];
  if (network.spec?.podPool?.name) pools.push({ field: 'spec.podPool', name: network.spec.podPool.name });
  if (network.spec?.dhcpPool?.name && network.spec.dhcp?.enabled !== false) pools.push({ field: 'spec.dhcpPool', name: network.spec.dhcpPool.name });
  if (network.spec?.dhcp6Pool?.name && network.spec.dhcp?.enabled !== false) pools.push({ field: 'spec.dhcp6Pool', name: network.spec.dhcp6Pool.name });
  // each relayed subnet's pool, with its own lease blocks (ADR 0032)
  const relayed: unknown = network.spec?.dhcp?.relayedSubnets;
  if (network.spec?.dhcp?.enabled !== false && Array.isArray(relayed)) {
    relayed.forEach((r: unknown, i) => {
      const name = (r as { pool?: { name?: unknown } } | null)?.pool?.name;
      if (typeof name === 'string' && name !== '') pools.push({ field: `spec.dhcp.relayedSubnets[${i}].pool`, name });
    });
  }
  return pools;
}

/** Why the source cannot hand over as it is (said before anything is written), or undefined. */
export function sourceProblem(network: ProvisioningNetworkObject | undefined, ref: string): string | undefined {
  if (!network) return `ProvisioningNetwork ${ref} does not exist on the source: name one with --network, or check --namespace`;
  if (network.metadata.deletionTimestamp) return `ProvisioningNetwork ${ref} is being deleted on the source`;
  const parsed = parseNetwork(network);
  if (!parsed.network) return `ProvisioningNetwork ${ref} on the source is not valid: ${parsed.problems.map((p) => p.message).join(' ')}`;
  const role = effectiveRole(parsed.network);
  if (role.kind === 'standby' && role.why === 'handoverPending') return `ProvisioningNetwork ${ref} on the source is itself waiting for a handover (spec.handover names another object): finish or cancel that pivot first`;
  return undefined;
}

/** What the target holds under the network's name, against the handover about to start. */
export function targetProblem(existing: ProvisioningNetworkObject | undefined, handover: Handover, ref: string): string | undefined {
  if (!existing) return undefined;
  const h = existing.spec?.handover;
  if (h?.sourceUID === handover.sourceUID) return undefined;
  if (h?.sourceUID) return `the target's ProvisioningNetwork ${ref} waits for a handover from another object (uid ${h.sourceUID}): delete it, or cancel that pivot first`;
  return `the target already has a ProvisioningNetwork ${ref} without a handover: its agents would contend for the VIP with the source's (the wire rule keeps one holder, but DHCP state would split); delete it on the target, or set its spec.handover.sourceUID to ${handover.sourceUID}`;
}

/** How one side's network reads now: its Ready reason, said for a person. */
export interface SideState {
  readonly ready: string;
  readonly reason: string;
  readonly message: string;
  readonly generationChecked: boolean;
}

export function sideState(network: ProvisioningNetworkObject | undefined): SideState | undefined {
  if (!network) return undefined;
  const ready = network.status?.conditions?.find((c) => c.type === 'Ready');
  const generation = network.metadata.generation ?? 0;
  return {
    ready: ready?.status ?? 'Unknown',
    reason: ready?.reason ?? 'NotChecked',
    message: ready?.message ?? 'the controller has not written a status (is ironet controller running there?)',
    generationChecked: (network.status?.observedGeneration ?? -1) === generation && (ready?.observedGeneration === undefined || ready.observedGeneration === generation),
  };
}

/** The source hands over: the controller accepted the handover and the holder's DHCP answers read-only. */
export function sourceHandsOver(s: SideState | undefined): boolean {
  return s !== undefined && s.generationChecked && s.ready === 'True' && s.reason === 'HandingOver';
}

/** The target waits for the handover (plumbed, silent). */
export function targetWaits(s: SideState | undefined): boolean {
  return s !== undefined && s.generationChecked && s.ready === 'True' && s.reason === 'HandoverPending';
}

/** The target holds the VIP and serves (the handover removed there). */
export function targetServes(s: SideState | undefined): boolean {
  return s !== undefined && s.generationChecked && s.ready === 'True' && s.reason === 'Ready';
}

/**
 * Whether the source has let go of the VIP for good: its network is gone or
 * being deleted (clusterctl deletes the moved objects only after it created
 * them all on the target, so the lease blocks are there) *and* none of its
 * VIP Leases has a holder renewing it. A Lease released while the network
 * still exists is a release inside the source cluster (a rollout, a holder
 * not Ready): another source agent takes the VIP, and the move has not
 * copied the leases yet — never a moment to take over.
 */
export function sourceLetGo(network: 'present' | 'deleting' | 'gone', holderRenewing: boolean): boolean {
  return network !== 'present' && !holderRenewing;
}
