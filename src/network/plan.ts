/**
 * The controller's decision for one ProvisioningNetwork, from what it read:
 * the NAD to create or patch, the VIP reservations to write into its pools,
 * the status (its `Ready` condition) and the Events. Pure: the reconciler
 * (reconciler.ts) applies it through the ports.
 *
 * What a schema cannot check is checked here: the VIP inside the CIDR, the
 * pools inside the CIDR, the pod pool and the DHCP pool apart, the VIP not
 * already handed out. Each problem names the field and the fix.
 */
import { cidrContains, formatCidr, type Cidr } from '../core/cidr.js';
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import type { Condition } from '../core/conditions.js';
import type { IpPoolObject } from '../ipam/objects.js';
import { indexEntryAddresses, isReservationKey } from '../ipam/objects.js';
import { inEntry, overlapsBetweenPools, parsePool, type PoolSpec } from '../ipam/pool-spec.js';
import { desiredNad, isOwnedBy, nadName, nadPatch, type NetworkAttachmentDefinitionObject } from './nad.js';
import { effectiveRole, parseNetwork, vipsOf, type Problem, type ProvisioningNetwork, type ProvisioningNetworkObject } from './network.js';
import { podCensus, type AgentPresence, type PodCensus } from './pod-census.js';
import type { PodObject } from './pods.js';

export interface PlanInput {
  readonly object: ProvisioningNetworkObject;
  /** The pools the spec names, by name; undefined: not found. */
  readonly pools: ReadonlyMap<string, IpPoolObject | undefined>;
  /** The NAD of the network's name in its namespace, if any. */
  readonly nad: NetworkAttachmentDefinitionObject | undefined;
  /** Every pool of the network's namespace (to find its reservations left where they no longer belong). */
  readonly allPools?: readonly IpPoolObject[];
  /** Every other ProvisioningNetwork (any namespace): a VIP belongs to one network only. */
  readonly others?: readonly ProvisioningNetworkObject[];
  /**
   * Whether the VIP Lease's holder is renewing it, as this controller has
   * seen (true / false), or undefined when there is no Lease yet.
   */
  readonly holderAlive?: boolean;
  /** Ironic pods with an address (bound claims), DHCP leases held. */
  readonly counts: { readonly attachedPods: number; readonly leases: number };
  /** The pods of the network's namespace and what is known of each node's agent heartbeat (the IronicPods condition); none: no census. */
  readonly ironicPods?: readonly PodObject[];
  readonly agents?: ReadonlyMap<string, AgentPresence>;
  /** How old such a pod must be before "no agent on its node" is said (default NO_AGENT_GRACE_MS). */
  readonly noAgentGraceMs?: number;
  /** How long a second Ironic pod on a node may run before it is said (default SECOND_POD_GRACE_MS). */
  readonly secondPodGraceMs?: number;
  readonly nowIso: string;
}

/** How long past its duration a VIP Lease may go unrenewed, as this controller sees it, before its holder counts as gone (watch lag). */
export const HOLDER_SILENCE_SLACK_MS = 1000;

/**
 * Whether the VIP Lease's holder renews it, judged by this controller's own
 * clock as followers judge it: undefined without a Lease; false when nobody
 * holds it, or when its holder and renewTime have not changed (as last seen,
 * monotonic) for its duration plus the slack.
 */
export function vipHolderAlive(lease: { readonly holder: string | undefined; readonly durationMs: number | undefined } | undefined, lastChangeSeenMs: number | undefined, nowMs: number): boolean | undefined {
  if (!lease) return undefined;
  if (!lease.holder) return false;
  return lastChangeSeenMs !== undefined && nowMs - lastChangeSeenMs < (lease.durationMs ?? 0) + HOLDER_SILENCE_SLACK_MS;
}

export type NadAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'create'; readonly object: NetworkAttachmentDefinitionObject }
  | { readonly kind: 'patch'; readonly patch: object };

/** The finalizer that lets the controller take a network's VIP reservations out of its pools before it goes. */
export const NETWORK_FINALIZER = 'ironet.io/provisioning-network';

/** A VIP reservation of this network in a pool that must go (the network is being deleted, or no longer uses that pool). */
export interface Release {
  readonly pool: string;
  readonly key: string;
}

/** `spec.preAllocations[key] = ip` in `pool`, conditional on the resourceVersion read. */
export interface Reservation {
  readonly pool: string;
  readonly resourceVersion: string;
  readonly key: string;
  readonly ip: string;
}

export interface StatusPlan {
  readonly observedGeneration: number;
  readonly attachedPods: number;
  readonly leases: number;
  readonly networkAttachmentDefinition: string | undefined;
  readonly conditions: Condition[];
}

export interface EventPlan {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly note: string;
}

export interface Plan {
  /** The network is being deleted: release, then drop the finalizer; nothing else. */
  readonly deleting: boolean;
  /** Add the finalizer first (a network that reserves must be able to un-reserve). */
  readonly addFinalizer: boolean;
  readonly releases: readonly Release[];
  readonly network: ProvisioningNetwork | undefined;
  readonly problems: readonly Problem[];
  readonly nad: NadAction;
  readonly reservations: readonly Reservation[];
  readonly status: StatusPlan;
  readonly events: readonly EventPlan[];
  /** The census of the network's Ironic pods (the IronicPods condition), when the network is valid. */
  readonly census?: PodCensus;
  /**
   * Warnings only the controller can give, recorded whatever Ready does: an
   * Ironic pod on a node without an agent that the IronicPods condition did
   * not name before (no agent is there to say it).
   */
  readonly censusEvents: readonly EventPlan[];
}

/** The preAllocations key that reserves a network's VIP in a pool (ADR 0006). */
export function vipReservationKey(networkName: string, family: 4 | 6): string {
  return family === 4 ? `reserved-vip-${networkName}` : `reserved-vip6-${networkName}`;
}

/** This network's reservation keys in every pool of its namespace, with the pool they are in. */
function ourReservations(name: string, pools: readonly IpPoolObject[]): Release[] {
  const keys = new Set([vipReservationKey(name, 4), vipReservationKey(name, 6)]);
  return pools.flatMap((p) => Object.keys(p.spec?.preAllocations ?? {}).filter((k) => keys.has(k)).map((key) => ({ pool: p.metadata.name ?? '', key })));
}

export function planNetwork(input: PlanInput): Plan {
  const name = input.object.metadata.name ?? '';
  const ours = ourReservations(name, input.allPools ?? []);
  if (input.object.metadata.deletionTimestamp) {
    return {
      deleting: true,
      addFinalizer: false,
      releases: ours,
      network: undefined,
      problems: [],
      nad: { kind: 'none' },
      reservations: [],
      censusEvents: [],
      events: ours.map((r) => ({ type: 'Normal' as const, reason: 'VIPReleased', note: `released the VIP reservation spec.preAllocations.${r.key} in IPPool ${r.pool} (the network is being deleted)` })),
      status: { observedGeneration: input.object.metadata.generation ?? 0, attachedPods: 0, leases: 0, networkAttachmentDefinition: undefined, conditions: [] },
    };
  }
  const { network, problems: specProblems } = parseNetwork(input.object);
  const problems: Problem[] = [...specProblems];
  const reservations: Reservation[] = [];
  let nad: NadAction = { kind: 'none' };
  const events: EventPlan[] = [];

  if (network) {
    const conflicts = vipConflicts(network, input.object, input.others ?? []);
    problems.push(...conflicts);
    const pools = poolProblems(network, input.pools);
    problems.push(...pools.problems);
    // a VIP another network owns is that network's to reserve: a second key with the same address would break the pool
    if (conflicts.length === 0) reservations.push(...pools.reservations);
    const want = desiredNad(network);
    if (!input.nad) nad = { kind: 'create', object: want };
    else if (!isOwnedBy(input.nad, network)) {
      problems.push({
        reason: 'NADConflict',
        field: 'metadata.name',
        message: `NetworkAttachmentDefinition ${network.namespace}/${nadName(network)} exists and was not generated for this ProvisioningNetwork; it is left alone: delete it (ironet generates its own) or rename the ProvisioningNetwork`,
      });
    } else {
      const patch = nadPatch(input.nad, want);
      if (patch) nad = { kind: 'patch', patch };
    }
    if (nad.kind === 'create') events.push({ type: 'Normal', reason: 'NetworkAttachmentCreated', note: `created NetworkAttachmentDefinition ${nadName(network)} (${network.attachment.mode} on ${network.attachment.parent})` });
    if (nad.kind === 'patch') events.push({ type: 'Normal', reason: 'NetworkAttachmentUpdated', note: `updated NetworkAttachmentDefinition ${nadName(network)} to match the spec` });
    for (const r of reservations) events.push({ type: 'Normal', reason: 'VIPReserved', note: `reserved the VIP ${r.ip} in IPPool ${r.pool} (spec.preAllocations.${r.key}), so no claim gets it` });
  }
  for (const p of problems) events.push({ type: 'Warning', reason: p.reason, note: p.message });

  const nadReady = network !== undefined && problems.every((p) => p.reason !== 'NADConflict');
  // reservations in pools the network no longer uses (spec.podPool / spec.dhcpPool changed, or the pool no longer covers the VIP)
  const keep = new Set(reservations.map((r) => `${r.pool}\u0000${r.key}`));
  if (network) {
    const used = [network.podPool, ...(network.dhcp.enabled && network.dhcpPool ? [network.dhcpPool] : []), ...(network.dhcp.enabled && network.dhcp6Pool ? [network.dhcp6Pool] : [])];
    for (const poolName of used) {
      const pool = input.pools.get(poolName);
      if (!pool) continue;
      const spec = parsePool(pool).spec;
      for (const vip of vipsOf(network)) {
        const key = vipReservationKey(name, vip.family);
        if (pool.spec?.preAllocations?.[key] === formatIp(vip) && spec?.entries.some((e) => inEntry(e, vip))) keep.add(`${poolName}\u0000${key}`);
      }
    }
  }
  const releases = network ? ours.filter((r) => !keep.has(`${r.pool}\u0000${r.key}`)) : [];
  const census = network && input.ironicPods ? podCensus(network, input.ironicPods, input.agents ?? new Map(), Date.parse(input.nowIso), { noAgentMs: input.noAgentGraceMs, secondPodMs: input.secondPodGraceMs }) : undefined;
  const generation = input.object.metadata.generation ?? 0;
  const podsCondition = census ? keepTransition(input.object, { type: 'IronicPods', ...census.condition, lastTransitionTime: input.nowIso, observedGeneration: generation }) : undefined;
  const shownBefore = input.object.status?.conditions?.find((c) => c.type === 'IronicPods')?.message ?? '';
  const censusEvents: EventPlan[] = (census?.problems ?? []).filter((p) => p.reason === 'NoAgentOnNode' && !shownBefore.includes(p.message)).map((p) => ({ type: 'Warning', reason: p.reason, note: p.message }));
  for (const r of releases) events.push({ type: 'Normal', reason: 'VIPReleased', note: `released the stale VIP reservation spec.preAllocations.${r.key} in IPPool ${r.pool} (the network no longer reserves there)` });
  return {
    deleting: false,
    addFinalizer: !(input.object.metadata.finalizers ?? []).includes(NETWORK_FINALIZER),
    releases,
    network,
    problems,
    nad,
    reservations,
    events,
    ...(census ? { census } : {}),
    censusEvents,
    status: {
      observedGeneration: input.object.metadata.generation ?? 0,
      attachedPods: input.counts.attachedPods,
      leases: input.counts.leases,
      networkAttachmentDefinition: nadReady ? nadName(network) : undefined,
      conditions: [readyCondition(input.object, network, problems, input.nowIso, input.holderAlive), ...(podsCondition ? [podsCondition] : [])],
    },
  };
}

/**
 * Two networks with one VIP would elect two holders (a Lease each): the
 * oldest network keeps it, every younger one is refused.
 */
function vipConflicts(n: ProvisioningNetwork, self: ProvisioningNetworkObject, others: readonly ProvisioningNetworkObject[]): Problem[] {
  const key = (o: ProvisioningNetworkObject): string => `${o.metadata.creationTimestamp ?? '~'}|${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
  const problems: Problem[] = [];
  for (const other of others) {
    if (other.metadata.uid === self.metadata.uid || key(other) >= key(self)) continue;
    const theirs = parseNetwork(other).network;
    if (!theirs) continue;
    for (const vip of vipsOf(n)) {
      if (!vipsOf(theirs).some((v) => v.family === vip.family && v.value === vip.value)) continue;
      problems.push({
        reason: 'VIPConflict',
        field: vip.family === 4 ? 'spec.vip.ipv4' : 'spec.vip.ipv6',
        message: `the VIP ${formatIp(vip)} already belongs to ProvisioningNetwork ${theirs.namespace}/${theirs.name} (older); two networks with one VIP would elect two holders: pick another VIP or delete one network`,
      });
    }
  }
  return problems;
}

/** Checks both pools against the network and each other; the VIP reservations each still needs. */
function poolProblems(n: ProvisioningNetwork, pools: PlanInput['pools']): { problems: Problem[]; reservations: Reservation[] } {
  const problems: Problem[] = [];
  const reservations: Reservation[] = [];
  const parsed = new Map<string, PoolSpec>();
  const refs: { field: string; name: string; what: string; relayed?: Cidr }[] = [{ field: 'spec.podPool.name', name: n.podPool, what: 'pod' }];
  if (n.dhcp.enabled && n.dhcpPool) refs.push({ field: 'spec.dhcpPool.name', name: n.dhcpPool, what: 'DHCP' });
  if (n.dhcp.enabled && n.dhcp6Pool) refs.push({ field: 'spec.dhcp6Pool.name', name: n.dhcp6Pool, what: 'DHCPv6' });
  // each relayed subnet's pool: inside its own subnet (ADR 0032); disjoint subnets keep the pools apart
  if (n.dhcp.enabled) n.dhcp.relayedSubnets.forEach((r, i) => refs.push({ field: `spec.dhcp.relayedSubnets[${i}].pool.name`, name: r.pool, what: `${formatCidr(r.cidr)} DHCP`, relayed: r.cidr }));
  for (const ref of refs) {
    const pool = pools.get(ref.name);
    if (!pool) {
      problems.push({ reason: 'PoolNotFound', field: ref.field, message: `${ref.field}: IPPool ${n.namespace}/${ref.name} does not exist; create it (the ${ref.what} addresses come from it) or name an existing pool` });
      continue;
    }
    const { spec, problems: poolIssues } = parsePool(pool);
    const blocking = poolIssues.filter((p) => p.severity === 'blocking');
    if (!spec || blocking.length > 0) {
      problems.push({ reason: 'PoolInvalid', field: ref.field, message: `${ref.field}: IPPool ${ref.name} cannot be used: ${blocking.map((p) => p.message).join('; ') || 'it has no valid entry'}` });
      continue;
    }
    if (ref.what === 'DHCPv6' && !spec.entries.some((e) => e.family === 6)) {
      problems.push({ reason: 'PoolInvalid', field: ref.field, message: `${ref.field}: IPPool ${ref.name} has no IPv6 range; DHCPv6 leases are IPv6 addresses on spec.ipv6Cidr: point spec.dhcp6Pool.name to an IPv6 IPPool` });
      continue;
    }
    parsed.set(ref.name, spec);
    for (const e of spec.entries) {
      if (ref.relayed) {
        if (e.family === 4 && cidrContains(ref.relayed, e.range.start) && cidrContains(ref.relayed, e.range.end)) continue;
        problems.push({
          reason: 'PoolOutsideCIDR',
          field: ref.field,
          message: `IPPool ${ref.name} spec.pools[${e.index}] (${formatIp(e.range.start)}-${formatIp(e.range.end)}) is not inside the relayed subnet ${formatCidr(ref.relayed)}; its hosts could not use such an address: fix the pool's range`,
        });
        continue;
      }
      const cidr: Cidr | undefined = e.family === 4 ? n.cidr : n.ipv6Cidr;
      const inside = cidr !== undefined && cidrContains(cidr, e.range.start) && cidrContains(cidr, e.range.end);
      if (!inside) {
        const span = `${formatIp(e.range.start)}-${formatIp(e.range.end)}`;
        problems.push({
          reason: 'PoolOutsideCIDR',
          field: ref.field,
          message: cidr
            ? `IPPool ${ref.name} spec.pools[${e.index}] (${span}) is not inside ${e.family === 4 ? 'spec.cidr' : 'spec.ipv6Cidr'} ${formatCidr(cidr)}; ${ref.what} addresses must be on the provisioning subnet: fix the pool's range`
            : `IPPool ${ref.name} spec.pools[${e.index}] (${span}) is IPv6 but the network has no spec.ipv6Cidr; set spec.ipv6Cidr or remove that entry`,
        });
      }
    }
    for (const vip of vipsOf(n)) {
      if (!spec.entries.some((e) => inEntry(e, vip))) continue;
      const holder = allocatedTo(pool, vip);
      if (holder) {
        problems.push({
          reason: 'VIPAllocated',
          field: vip.family === 4 ? 'spec.vip.ipv4' : 'spec.vip.ipv6',
          message: `the VIP ${formatIp(vip)} is already allocated in IPPool ${ref.name} (status.indexes.${holder}); release that claim (kubectl -n ${n.namespace} delete ipclaim ${holder}) or pick another VIP`,
        });
      }
      // reserved once, under any reservation key (another network on this pool may have done it): a second key with
      // the same address would make the pool invalid; a claim's pre-allocation of the VIP is the user's to remove
      const preAllocated = Object.entries(pool.spec?.preAllocations ?? {}).filter(([, v]) => ipTextEquals(v, vip));
      const claimKey = preAllocated.find(([k]) => !isReservationKey(k))?.[0];
      if (claimKey !== undefined) {
        problems.push({
          reason: 'VIPAllocated',
          field: vip.family === 4 ? 'spec.vip.ipv4' : 'spec.vip.ipv6',
          message: `the VIP ${formatIp(vip)} is pre-allocated to claim ${claimKey} in IPPool ${ref.name} (spec.preAllocations.${claimKey}); remove that entry or pick another VIP`,
        });
      } else if (preAllocated.length === 0) {
        reservations.push({ pool: ref.name, resourceVersion: pool.metadata.resourceVersion ?? '', key: vipReservationKey(n.name, vip.family), ip: formatIp(vip) });
      }
    }
  }
  const pod = parsed.get(n.podPool);
  // DHCPv4's pool and DHCPv6's (ADR 0038) each kept apart from the pods'
  for (const [field, name, what] of [['spec.dhcpPool.name', n.dhcpPool, 'DHCP'], ['spec.dhcp6Pool.name', n.dhcp6Pool, 'DHCPv6']] as const) {
    const dhcp = name ? parsed.get(name) : undefined;
    if (!pod || !dhcp || !name) continue;
    const overlaps = overlapsBetweenPools(n.podPool, pod, name, dhcp);
    if (overlaps.length > 0) {
      problems.push({
        reason: 'PoolsOverlap',
        field,
        message: `IPPools ${n.podPool} (pods) and ${name} (${what}) overlap: ${overlaps.map((o) => o.field).join(', ')} of ${n.podPool}; give each its own range so a lease never lands on a pod's address`,
      });
    }
  }
  return { problems, reservations };
}

function ipTextEquals(text: string, ip: IpAddress): boolean {
  const parsed = tryParseIp(text);
  return parsed !== undefined && parsed.family === ip.family && parsed.value === ip.value;
}

/** The claim (status.indexes key) an address is allocated to in a pool, ignoring reservations. */
function allocatedTo(pool: IpPoolObject, ip: IpAddress): string | undefined {
  for (const [key, value] of Object.entries(pool.status?.indexes ?? {})) {
    if (isReservationKey(key)) continue;
    if (indexEntryAddresses(key, value).some((a) => a.family === ip.family && a.value === ip.value)) return key;
  }
  return undefined;
}

/**
 * `Ready`: the spec and its pools are usable, the NAD is ours, and an agent
 * holds the VIP (its `VIPAssigned` condition, which the agents write), plus
 * DHCP serving when enabled. The transition time moves only when the status does.
 */
function readyCondition(obj: ProvisioningNetworkObject, network: ProvisioningNetwork | undefined, problems: readonly Problem[], nowIso: string, holderAlive: boolean | undefined): Condition {
  const conditions = obj.status?.conditions ?? [];
  const get = (type: string): Condition | undefined => conditions.find((c) => c.type === type);
  const dhcpEnabled = obj.spec?.dhcp?.enabled ?? true;
  const role = network ? effectiveRole(network) : { kind: 'active' as const };
  const holderText = obj.status?.vipHolder?.pod ? `pod ${obj.status.vipHolder.pod} on node ${obj.status.vipHolder.node ?? '?'}` : 'a holder';
  let status: Condition['status'];
  let reason: string;
  let message: string;
  if (problems.length > 0) {
    status = 'False';
    reason = problems[0]!.reason;
    message = problems.map((p) => p.message).join(' ');
  } else if (role.kind === 'standby') {
    // the silent side of a pivot: nobody here holds the VIP or serves DHCP, on purpose; a VIPAssigned left behind by a
    // holder that died (or whose step-down write was lost) counts only while its Lease is renewed
    const held = get('VIPAssigned')?.status === 'True' && holderAlive !== false;
    const pending = role.why === 'handoverPending';
    const what = pending
      ? `this is the target of a handover from ${role.source ?? `the ProvisioningNetwork with uid ${network?.handover?.sourceUID ?? '?'}`} (spec.handover)`
      : 'spec.role is Standby';
    status = held ? 'False' : 'True';
    reason = held ? 'StandbyStillHeld' : pending ? 'HandoverPending' : 'Standby';
    message = held
      ? `${what} but ${holderText} still holds the VIP: it steps down within a retry period`
      : pending
        ? `${what}: the Ironic pods are plumbed and the leases followed, but no agent of this cluster holds the VIP or answers DHCP until the source has let go and spec.handover is removed here (ironet pivot does both; docs/pivot.md)`
        : `${what}: the Ironic pods are plumbed, but no agent of this cluster holds the VIP or answers DHCP; set spec.role: Active to serve`;
  } else if (get('VIPAssigned')?.status !== 'True') {
    status = 'False';
    reason = 'WaitingForVIPHolder';
    message = `no agent holds the VIP yet: an Ironic pod matching spec.ironicPodSelector must run on a node with the ironet agent and request the NetworkAttachmentDefinition ${obj.metadata.name ?? ''} in its k8s.v1.cni.cncf.io/networks annotation${get('VIPAssigned')?.message ? ` (${get('VIPAssigned')!.message})` : ''}`;
  } else if (holderAlive === false) {
    // the agents' VIPAssigned says held, but the Lease is not being renewed: the holder is gone (SIGKILL, node down)
    // and no other agent took over; its VIP went with its kernel lifetime
    status = 'False';
    reason = 'VIPHolderUnresponsive';
    message = `${obj.status?.vipHolder?.pod ? `pod ${obj.status.vipHolder.pod} on node ${obj.status.vipHolder.node ?? '?'}` : 'the holder'} stopped renewing the VIP Lease and no other agent took over: check that another Ironic pod of this network is Ready on a node with the ironet agent`;
  } else if (dhcpEnabled && get('DHCPServing')?.status !== 'True') {
    status = 'False';
    reason = 'WaitingForDHCP';
    message = `the VIP is held but DHCP is not serving${get('DHCPServing')?.message ? `: ${get('DHCPServing')!.message}` : ''}`;
  } else if (role.kind === 'handingOver' && dhcpEnabled && get('DHCPServing')?.reason !== 'HandingOver') {
    // the move must not begin before the holder's DHCP answers read-only
    status = 'False';
    reason = 'WaitingForDHCP';
    message = `spec.handover names this network, but the VIP holder's DHCP has not said yet that it answers only the leases it holds (${get('DHCPServing')?.reason ?? 'no DHCPServing condition'})`;
  } else if (role.kind === 'handingOver') {
    status = 'True';
    reason = 'HandingOver';
    message = `handing over${role.target ? ` to ${role.target}` : ''} (spec.handover names this object): the VIP stays here${dhcpEnabled ? ', and DHCP answers only the leases it has — no new client, no lease written — so that clusterctl move copies every lease' : ''}; the target takes over once this network is gone (clusterctl move deletes it); remove spec.handover to cancel`;
  } else {
    status = 'True';
    reason = 'Ready';
    message = dhcpEnabled ? 'the VIP is held and DHCP is serving' : 'the VIP is held';
  }
  return keepTransition(obj, { type: 'Ready', status, reason, message, lastTransitionTime: nowIso, observedGeneration: obj.metadata.generation ?? 0 });
}

/** `c` with the transition time of the object's condition of its type while its status stays. */
function keepTransition(obj: ProvisioningNetworkObject, c: Condition): Condition {
  const previous = obj.status?.conditions?.find((x) => x.type === c.type);
  return previous && previous.status === c.status ? { ...c, lastTransitionTime: previous.lastTransitionTime } : c;
}
