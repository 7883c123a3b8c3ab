/**
 * The ProvisioningNetwork controller's view of the cluster (the multus
 * capability's NetworkStore port): informers over ProvisioningNetworks, the
 * NetworkAttachmentDefinitions ironet generated (by label), and IPPools; writes
 * go to the API server and are written through to the caches.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { withFinalizer, type KubeObject } from '../core/object-meta.js';
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import { leaseCensus, poolOfBlock } from '../dhcp/lease-census.js';
import type { IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import type { NetworkAttachmentDefinitionObject } from '../network/nad.js';
import { NETWORK_LABEL, type ProvisioningNetworkObject } from '../network/network.js';
import { HOLDER_SILENCE_SLACK_MS, NETWORK_FINALIZER, vipHolderAlive, type EventPlan, type Reservation, type StatusPlan } from '../network/plan.js';
import type { NetworkSnapshot, NetworkStore, WriteOutcome } from '../network/ports.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, notSyncedReason, runInformers, type Informer } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import type { LeaseObject } from './coordination-lease.js';
import { RESOURCES } from './resources.js';
import { vipLeaseName, type PodObject } from '../network/pods.js';
import { AGENT_HEARTBEAT_LABEL, AGENT_HEARTBEAT_NODE_ANNOTATION, agentHeartbeatName, agentPresence, censusPod, type AgentPresence } from '../network/pod-census.js';
import { objectKey } from './types.js';

/** The field manager of the controller's part of a ProvisioningNetwork's status. */
export const CONTROLLER_FIELD_MANAGER = 'ironet-controller';

export interface KubeNetworkStoreOptions {
  /** Watch one namespace, or all when undefined. */
  readonly namespace?: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: EventRecorder;
  /** Called with a network key whenever something it depends on changes. */
  readonly onChanged: (key: string) => void;
}

export class KubeNetworkStore implements NetworkStore {
  private readonly networks: ResourceClient<ProvisioningNetworkObject>;
  private readonly nads: ResourceClient<NetworkAttachmentDefinitionObject>;
  private readonly pools: ResourceClient<IpPoolObject>;
  private readonly networkInformer: Informer<ProvisioningNetworkObject>;
  private readonly nadInformer: Informer<NetworkAttachmentDefinitionObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly blockInformer: Informer<DhcpLeaseBlockObject>;
  private readonly leaseInformer: Informer<LeaseObject>;
  private readonly podInformer: Informer<PodObject>;
  private readonly heartbeatInformer: Informer<LeaseObject>;
  /** When (monotonic) each agent heartbeat's renewTime was last seen to change. */
  private readonly heartbeatSeen = new Map<string, { value: string; atMs: number }>();
  /** When (monotonic) each VIP Lease's holder/renewTime was last seen to change: a holder is alive while that is recent. */
  private readonly leaseSeen = new Map<string, { value: string; atMs: number }>();

  constructor(
    kube: KubeClient,
    private readonly o: KubeNetworkStoreOptions,
  ) {
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.networks = kube.resource(RESOURCES.provisioningNetwork);
    this.nads = kube.resource(RESOURCES.networkAttachmentDefinition);
    this.pools = kube.resource(RESOURCES.ipPool);
    // a VIP conflict depends on the other networks: a change to one re-checks every network
    this.networkInformer = informerFor(this.networks, {
      ...common,
      name: 'provisioningnetworks',
      onEvent: (e) => {
        o.onChanged(objectKey(e.object));
        for (const other of this.networkInformer.list()) if (other.metadata.uid !== e.object.metadata.uid) o.onChanged(objectKey(other));
      },
    });
    // every NAD, not only ours: one of a network's name that someone else wrote must be seen (and reported), not overwritten
    this.nadInformer = informerFor(this.nads, {
      ...common,
      name: 'network-attachment-definitions',
      onEvent: (e) => {
        const owner = e.object.metadata.labels?.[NETWORK_LABEL] ?? e.object.metadata.name ?? '';
        const key = `${e.object.metadata.namespace ?? ''}/${owner}`;
        if (this.networkInformer.get(key)) o.onChanged(key);
      },
    });
    // pools change on every allocation: only the networks naming the pool are told
    this.poolInformer = informerFor(this.pools, {
      ...common,
      name: 'provisioning-ippools',
      onEvent: (e) => {
        for (const key of this.networksNaming(e.object.metadata.namespace ?? '', e.object.metadata.name ?? '')) o.onChanged(key);
      },
    });
    // the counts on the status: Ironic pods with an address (their claims carry the network's label), DHCP leases in blocks
    this.claimInformer = informerFor(kube.resource<IpClaimObject>(RESOURCES.ipClaim), {
      ...common,
      name: 'provisioning-pod-claims',
      selectors: { labelSelector: NETWORK_LABEL },
      onEvent: (e) => o.onChanged(`${e.object.metadata.namespace ?? ''}/${e.object.metadata.labels?.[NETWORK_LABEL] ?? ''}`),
    });
    // the VIP Leases (labelled with their network): judged by this controller's own clock, as followers judge them
    this.leaseInformer = informerFor(kube.resource<LeaseObject>(RESOURCES.lease), {
      ...common,
      name: 'provisioning-vip-leases',
      selectors: { labelSelector: NETWORK_LABEL },
      onEvent: (e) => {
        this.noteRenewal(this.leaseSeen, e.object);
        const network = e.object.metadata.labels?.[NETWORK_LABEL];
        if (network) o.onChanged(`${e.object.metadata.namespace ?? ''}/${network}`);
      },
    });
    // the Ironic pods on every node (census: is there an agent where each runs?), kept slim; a pod change re-checks the networks of its namespace
    this.podInformer = informerFor(kube.resource<PodObject>(RESOURCES.pod), {
      ...common,
      name: 'provisioning-ironic-pods',
      transform: censusPod,
      onEvent: (e) => this.changedIn(e.object.metadata.namespace),
    });
    // the agents' heartbeats (one Lease per node and namespace), judged by this controller's own clock
    this.heartbeatInformer = informerFor(kube.resource<LeaseObject>(RESOURCES.lease), {
      ...common,
      name: 'provisioning-agent-heartbeats',
      selectors: { labelSelector: AGENT_HEARTBEAT_LABEL },
      onEvent: (e) => {
        this.noteRenewal(this.heartbeatSeen, e.object);
        this.changedIn(e.object.metadata.namespace);
      },
    });
    this.blockInformer = informerFor(kube.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock), {
      ...common,
      name: 'provisioning-lease-blocks',
      selectors: { labelSelector: BLOCK_POOL_LABEL },
      onEvent: (e) => {
        for (const key of this.networksNaming(e.object.metadata.namespace ?? '', e.object.metadata.labels?.[BLOCK_POOL_LABEL] ?? '')) o.onChanged(key);
      },
    });
  }

  /** Remembers when (monotonic) a Lease's holder or renewTime was last seen to change: its holder is alive while that is recent. */
  private noteRenewal(seen: Map<string, { value: string; atMs: number }>, lease: LeaseObject): void {
    const value = `${lease.spec?.holderIdentity ?? ''}|${lease.spec?.renewTime ?? ''}`;
    if (seen.get(objectKey(lease))?.value !== value) seen.set(objectKey(lease), { value, atMs: this.o.clock.monotonicMs() });
  }

  /** Every network of `namespace` is looked at again. */
  private changedIn(namespace: string | undefined): void {
    for (const n of this.networkInformer.list()) if (n.metadata.namespace === namespace) this.o.onChanged(objectKey(n));
  }

  private informers(): Informer<KubeObject>[] {
    return [this.networkInformer, this.nadInformer, this.poolInformer, this.claimInformer, this.blockInformer, this.leaseInformer, this.podInformer, this.heartbeatInformer] as Informer<KubeObject>[];
  }

  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    return runInformers(this.informers(), signal);
  }

  notSyncedReason(): string | undefined {
    return notSyncedReason(this.informers());
  }

  networkKeys(): string[] {
    return this.networkInformer.list().map(objectKey);
  }

  snapshot(key: string): NetworkSnapshot | undefined {
    const object = this.networkInformer.get(key);
    if (!object) return undefined;
    const ns = object.metadata.namespace ?? '';
    const pools = new Map<string, IpPoolObject | undefined>();
    for (const name of [object.spec?.podPool?.name, object.spec?.dhcpPool?.name, object.spec?.dhcp6Pool?.name, ...relayedPoolNames(object)]) {
      if (typeof name === 'string' && name !== '') pools.set(name, this.poolInformer.get(`${ns}/${name}`));
    }
    const nad = this.nadInformer.get(`${ns}/${object.metadata.name ?? ''}`);
    const name = object.metadata.name ?? '';
    const attachedPods = this.claimInformer.list().filter((c) => c.metadata.namespace === ns && c.metadata.labels?.[NETWORK_LABEL] === name && c.status?.address?.name).length;
    let leases = 0;
    // the provisioning subnet's pool, each relayed subnet's (ADR 0032), and DHCPv6's (ADR 0038)
    for (const dhcpPool of [object.spec?.dhcpPool?.name, ...relayedPoolNames(object), object.spec?.dhcp6Pool?.name]) {
      if (typeof dhcpPool !== 'string' || dhcpPool === '') continue;
      // in the pool's lease blocks, and static reservations (and older leases) as pool entries `dhcp-<mac>`
      const pool = pools.get(dhcpPool);
      const blocks = this.blockInformer.list().filter((b) => b.metadata.namespace === ns && poolOfBlock(b) === `${ns}/${dhcpPool}`);
      leases += leaseCensus({ pools: pool ? [pool] : [], blocks }).length;
    }
    const others = this.networkInformer.list().filter((o) => o.metadata.uid !== object.metadata.uid);
    const allPools = this.poolInformer.list().filter((p) => p.metadata.namespace === ns);
    const leaseKey = `${ns}/${vipLeaseName({ name })}`;
    const lease = this.leaseInformer.get(leaseKey);
    const leaseDurationMs = lease?.spec?.leaseDurationSeconds ? lease.spec.leaseDurationSeconds * 1000 : undefined;
    const seen = this.leaseSeen.get(leaseKey);
    const holderAlive = vipHolderAlive(lease && { holder: lease.spec?.holderIdentity ?? undefined, durationMs: leaseDurationMs }, seen?.atMs, this.o.clock.monotonicMs());
    const now = this.o.clock.monotonicMs();
    const ironicPods = this.podInformer.list().filter((p) => p.metadata.namespace === ns);
    const agents = new Map<string, AgentPresence>();
    for (const h of this.heartbeatInformer.list()) {
      const node = heartbeatNode(h);
      const seen = this.heartbeatSeen.get(objectKey(h));
      if (h.metadata.namespace !== ns || !node || !seen) continue;
      agents.set(node, agentPresence({ holder: h.spec?.holderIdentity ?? undefined, durationMs: (h.spec?.leaseDurationSeconds ?? 0) * 1000 }, seen.atMs, now, HOLDER_SILENCE_SLACK_MS));
    }
    return { object, pools, allPools, nad, others, counts: { attachedPods, leases }, holderAlive, leaseDurationMs, ironicPods, agents };
  }

  async createNad(nad: NetworkAttachmentDefinitionObject): Promise<WriteOutcome> {
    try {
      this.nadInformer.observe(await this.nads.create(nad));
      return 'ok';
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // created meanwhile (by anyone): the next pass sees it in the cache and decides
      return 'conflict';
    }
  }

  patchNad(namespace: string, name: string, patch: object): Promise<WriteOutcome> {
    return outcomeOf(this.nads.mergePatch({ namespace, name }, patch), this.nadInformer);
  }

  reserve(namespace: string, r: Reservation): Promise<WriteOutcome> {
    // one key, merged: no resourceVersion precondition, which the pool's every allocation (status) would break;
    // a claim that got the VIP meanwhile is reported (VIPAllocated) on the next pass, and agents wait for that pass
    return outcomeOf(this.pools.mergePatch({ namespace, name: r.pool }, { spec: { preAllocations: { [r.key]: r.ip } } }), this.poolInformer);
  }

  unreserve(namespace: string, pool: string, key: string): Promise<WriteOutcome> {
    return outcomeOf(this.pools.mergePatch({ namespace, name: pool }, { spec: { preAllocations: { [key]: null } } }), this.poolInformer);
  }

  async setFinalizer(object: ProvisioningNetworkObject, change: 'add' | 'remove'): Promise<WriteOutcome> {
    const finalizers = withFinalizer(object.metadata, NETWORK_FINALIZER, change);
    if (!finalizers) return 'ok';
    const outcome = await outcomeOf(this.networks.mergePatch({ namespace: object.metadata.namespace, name: object.metadata.name ?? '' }, { metadata: { finalizers } }, { resourceVersion: object.metadata.resourceVersion }), this.networkInformer);
    // removing the finalizer of an object already gone is done
    return outcome === 'notFound' && change === 'remove' ? 'ok' : outcome;
  }

  writeStatus(object: ProvisioningNetworkObject, status: StatusPlan): Promise<WriteOutcome> {
    const id = { namespace: object.metadata.namespace, name: object.metadata.name ?? '' };
    const body = {
      status: {
        observedGeneration: status.observedGeneration,
        ...(status.networkAttachmentDefinition ? { networkAttachmentDefinition: status.networkAttachmentDefinition } : {}),
        attachedPods: status.attachedPods,
        leases: status.leases,
        conditions: status.conditions,
      },
    };
    return outcomeOf(this.networks.applyStatus(id, body, CONTROLLER_FIELD_MANAGER), this.networkInformer);
  }

  async recordEvent(object: ProvisioningNetworkObject, event: EventPlan): Promise<void> {
    try {
      await this.o.events.record(
        { apiVersion: 'ironet.io/v1alpha1', kind: 'ProvisioningNetwork', metadata: object.metadata },
        { type: event.type, reason: event.reason, action: 'Reconcile', note: event.note },
      );
    } catch (err) {
      this.o.logger.warn({ err: describeError(err), reason: event.reason }, 'could not record event');
    }
  }

  private networksNaming(namespace: string, pool: string): string[] {
    return this.networkInformer
      .list()
      .filter((n) => n.metadata.namespace === namespace && (n.spec?.podPool?.name === pool || n.spec?.dhcpPool?.name === pool || n.spec?.dhcp6Pool?.name === pool || relayedPoolNames(n).includes(pool)))
      .map(objectKey);
  }
}

/** The pools spec.dhcp.relayedSubnets names, as written (the parse checks them). */
function relayedPoolNames(object: ProvisioningNetworkObject): string[] {
  const list: unknown = object.spec?.dhcp?.relayedSubnets;
  if (!Array.isArray(list)) return [];
  return list.flatMap((r: unknown) => {
    const name = (r as { pool?: { name?: unknown } } | null)?.pool?.name;
    return typeof name === 'string' && name !== '' ? [name] : [];
  });
}

/** A write's outcome for the reconciler (written through to the cache when it worked); other errors are thrown. */
async function outcomeOf<T extends KubeObject>(write: Promise<T>, cache: Informer<T>): Promise<WriteOutcome> {
  try {
    cache.observe(await write);
    return 'ok';
  } catch (err) {
    if (isNotFound(err)) return 'notFound';
    if (isConflict(err)) return 'conflict';
    throw err;
  }
}

/**
 * Whose heartbeat a Lease is: its annotation; else (written by an agent
 * before the annotation, or edited) its holder; else its name, when that is
 * the node's unhashed heartbeat name.
 */
function heartbeatNode(h: LeaseObject): string | undefined {
  const named = h.metadata.annotations?.[AGENT_HEARTBEAT_NODE_ANNOTATION] ?? h.spec?.holderIdentity ?? undefined;
  if (named) return named;
  const name = h.metadata.name ?? '';
  const node = name.startsWith('ironet-agent-') ? name.slice('ironet-agent-'.length) : '';
  return node !== '' && agentHeartbeatName(node) === name ? node : undefined;
}
