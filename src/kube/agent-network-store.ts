/**
 * The agent's view of the cluster in ProvisioningNetwork mode: informers over
 * the ProvisioningNetworks and the pods scheduled to this node (field selector
 * on spec.nodeName), the pods' address IPClaims, and the holder's part of a
 * network's status (server-side apply, field manager `ironet-agent`: the
 * controller's Ready condition is kept).
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import type { Condition } from '../core/conditions.js';
import type { IpAddressObject, IpClaimObject } from '../ipam/objects.js';
import type { HolderReport } from '../network/agent-runner.js';
import type { ProvisioningNetwork, ProvisioningNetworkObject } from '../network/network.js';
import { claimedAddress, podClaim, type ClaimedAddress, type PodObject } from '../network/pods.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, notSyncedReason, runInformers, type Informer } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { formatTime } from './time.js';
import { objectKey } from './types.js';

export const AGENT_FIELD_MANAGER = 'ironet-agent';

interface SaidState {
  holding: boolean;
  pod: string;
  /** The unit's identity (its Lease holderIdentity). */
  agent: string;
  since: string;
  dhcp: { serving: boolean; message: string } | undefined;
  conditions: Map<string, Condition>;
}

export interface KubeAgentNetworkStoreOptions {
  readonly events: EventRecorder;
  readonly namespace: string | undefined;
  readonly nodeName: string;
  readonly identity: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called with a network key whenever it or a pod on this node changes. */
  readonly onChanged: (key: string) => void;
}

export class KubeAgentNetworkStore {
  private readonly networks: ResourceClient<ProvisioningNetworkObject>;
  private readonly claims: ResourceClient<IpClaimObject>;
  private readonly addresses: ResourceClient<IpAddressObject>;
  private readonly networkInformer: Informer<ProvisioningNetworkObject>;
  private readonly podInformer: Informer<PodObject>;

  constructor(
    kube: KubeClient,
    private readonly o: KubeAgentNetworkStoreOptions,
  ) {
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.networks = kube.resource(RESOURCES.provisioningNetwork);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    this.networkInformer = informerFor(this.networks, { ...common, name: 'provisioningnetworks', onEvent: (e) => o.onChanged(objectKey(e.object)) });
    this.podInformer = informerFor(kube.resource<PodObject>(RESOURCES.pod), {
      ...common,
      name: 'pods-on-node',
      selectors: { fieldSelector: `spec.nodeName=${o.nodeName}` },
      // keep only what the agent reads: a pod's spec and status are large
      transform: (p) => ({
        metadata: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid, labels: p.metadata.labels, annotations: p.metadata.annotations, creationTimestamp: p.metadata.creationTimestamp, deletionTimestamp: p.metadata.deletionTimestamp, resourceVersion: p.metadata.resourceVersion },
        spec: { nodeName: p.spec?.nodeName, hostNetwork: p.spec?.hostNetwork },
        status: { phase: p.status?.phase, conditions: (p.status?.conditions ?? []).map((c) => ({ type: c.type, status: c.status })) },
      }),
      onEvent: (e) => {
        for (const n of this.networkInformer.list()) if (n.metadata.namespace === e.object.metadata.namespace) o.onChanged(objectKey(n));
      },
    });
  }

  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    return runInformers([this.networkInformer, this.podInformer] as Informer<KubeObject>[], signal);
  }

  notSyncedReason(): string | undefined {
    return notSyncedReason([this.networkInformer, this.podInformer] as Informer<KubeObject>[]);
  }

  networkKeys(): string[] {
    return this.networkInformer.list().map(objectKey);
  }

  network(key: string): ProvisioningNetworkObject | undefined {
    return this.networkInformer.get(key);
  }

  pods(): PodObject[] {
    return this.podInformer.list();
  }

  async claim(network: ProvisioningNetwork, pod: PodObject): Promise<ClaimedAddress> {
    const want = podClaim(network, pod);
    const id = { namespace: network.namespace, name: want.metadata.name ?? '' };
    let claim = await this.claims.tryGet(id);
    if (!claim) {
      try {
        claim = await this.claims.create(want);
        this.o.logger.info({ pod: pod.metadata.name, pool: network.podPool }, 'claimed an address for the Ironic pod');
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        claim = await this.claims.tryGet(id);
      }
    }
    const addressName = claim?.status?.address?.name;
    const address = addressName ? await this.addresses.tryGet({ namespace: network.namespace, name: addressName }) : undefined;
    return claimedAddress(network, claim, address, pod.metadata.uid);
  }

  async releaseClaim(namespace: string, name: string): Promise<void> {
    try {
      await this.claims.delete({ namespace, name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async warn(network: ProvisioningNetwork, reason: string, note: string): Promise<void> {
    await this.o.events.record(
      { apiVersion: 'ironet.io/v1alpha1', kind: 'ProvisioningNetwork', metadata: { name: network.name, namespace: network.namespace, uid: network.uid } },
      { type: 'Warning', reason, action: 'Attach', note },
    );
  }

  /** What this agent last said on each network's status (server-side apply replaces all of a manager's fields at once). */
  private readonly said = new Map<string, SaidState>();

  async report(network: ProvisioningNetwork, r: HolderReport): Promise<void> {
    const key = `${network.namespace}/${network.name}`;
    const now = formatTime(this.o.clock.wallMs());
    const state: SaidState = this.said.get(key) ?? { holding: false, pod: r.pod, agent: r.agent, since: now, dhcp: undefined, conditions: new Map() };
    if (r.kind === 'holding') {
      if (r.holding && !state.holding) state.since = now;
      state.holding = r.holding;
      state.pod = r.pod;
      state.agent = r.agent;
      state.dhcp = undefined; // a new term starts its DHCP again
    } else {
      if (!state.holding || state.agent !== r.agent) return; // a late report from a term that ended
      state.dhcp = { serving: r.serving, message: r.message };
    }
    this.said.set(key, state);
    if (r.kind === 'holding' && !r.holding) {
      // stepping down: only while the status still names this unit, and conditional on the version seen, so a
      // late write can never replace the next holder's report
      const cached = this.networkInformer.get(key);
      if (cached?.status?.vipHolder?.agent !== r.agent) return;
      await this.apply(network, state, now, cached.metadata.resourceVersion);
      return;
    }
    await this.apply(network, state, now);
  }

  /**
   * The holder says again what it said when the status no longer shows it (a
   * write that failed, or was replaced by a stepping-down agent's): called on
   * every pass over the network.
   */
  async reassert(network: ProvisioningNetwork): Promise<void> {
    const key = `${network.namespace}/${network.name}`;
    const state = this.said.get(key);
    if (!state?.holding) return;
    const status = this.networkInformer.get(key)?.status;
    const shown = status?.conditions?.find((c) => c.type === 'VIPAssigned');
    const dhcpShown = status?.conditions?.find((c) => c.type === 'DHCPServing')?.status;
    const dhcpSaid = network.dhcp.enabled && state.dhcp?.serving ? 'True' : 'False';
    if (status?.vipHolder?.agent === state.agent && shown?.status === 'True' && dhcpShown === dhcpSaid) return;
    await this.apply(network, state, formatTime(this.o.clock.wallMs()));
  }

  private async apply(network: ProvisioningNetwork, state: SaidState, now: string, resourceVersion?: string): Promise<void> {
    const where = `pod ${state.pod} on node ${this.o.nodeName}`;
    const cond = (type: string, status: Condition['status'], reason: string, message: string): Condition => {
      const before = state.conditions.get(type);
      const c: Condition = { type, status, reason, message, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now, observedGeneration: network.generation };
      state.conditions.set(type, c);
      return c;
    };
    const vipAssigned = state.holding
      ? cond('VIPAssigned', 'True', 'Held', `${where} holds the VIP`)
      : cond('VIPAssigned', 'False', 'SteppedDown', `${where} gave the VIP up; another agent takes it`);
    const dhcp = !network.dhcp.enabled
      ? cond('DHCPServing', 'False', 'Disabled', 'spec.dhcp.enabled is false')
      : !state.holding
        ? cond('DHCPServing', 'False', 'NoVIPHolder', 'DHCP is served by the VIP holder')
        : state.dhcp === undefined
          ? cond('DHCPServing', 'False', 'Starting', `DHCP is loading its leases on ${where}`)
          : state.dhcp.serving
            ? cond('DHCPServing', 'True', 'Serving', `DHCP serves on ${where}`)
            : cond('DHCPServing', 'False', 'StartFailed', `DHCP could not start on ${where}: ${state.dhcp.message}`);
    const status = {
      ...(state.holding ? { vipHolder: { node: this.o.nodeName, pod: state.pod, agent: state.agent, since: state.since } } : {}),
      conditions: [vipAssigned, dhcp],
    };
    try {
      await this.networks.applyStatus({ namespace: network.namespace, name: network.name }, { status }, AGENT_FIELD_MANAGER, { signal: AbortSignal.timeout(2000), resourceVersion });
    } catch (err) {
      if (isConflict(err)) return; // the status changed meanwhile (another holder): nothing of ours to say
      this.o.logger.warn({ err: describeError(err), holding: state.holding }, 'could not report on the ProvisioningNetwork status');
    }
  }
}
