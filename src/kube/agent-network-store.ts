/**
 * The agent's view of the cluster in ProvisioningNetwork mode: informers over
 * the ProvisioningNetworks and the pods scheduled to this node (field selector
 * on spec.nodeName), the pods' address IPClaims, and the holder's part of a
 * network's status (server-side apply, field manager `ironet-agent`: the
 * controller's Ready condition is kept).
 */
import type { Clock } from '../core/clock.js';
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import type { IpAddressObject, IpClaimObject } from '../ipam/objects.js';
import type { HolderReport } from '../network/agent-runner.js';
import { agentStatus, mayWrite, needsReassert, planReport, type SaidState } from '../network/agent-status.js';
import { claimedAddress, IN_USE_ON_WIRE_LABEL, podClaim, slimPod, wireHeldClaim, type ClaimedAddress, type PodObject } from '../network/pods.js';
import { NETWORK_LABEL, type ProvisioningNetwork, type ProvisioningNetworkObject } from '../network/network.js';
import type { ParentReport } from '../network/parent.js';
import { REQUESTED_IP_ANNOTATION } from '../ipam/objects.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, notSyncedReason, runInformers, type Informer } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { formatTime } from './time.js';
import { objectKey } from './types.js';

export const AGENT_FIELD_MANAGER = 'ironet-agent';

/** How long the agent's Node labels are taken as read (parentOverrides by nodeSelector). */
export const NODE_LABELS_TTL_MS = 30_000;

/**
 * The field manager of one node's entry in status.parentInterfaces: a manager
 * per node, so each agent's apply keeps the other nodes' entries (server-side
 * apply drops what a manager no longer sends). At most 128 characters.
 */
export function parentFieldManager(nodeName: string): string {
  return `ironet-agent-parent/${nodeName}`.slice(0, 128);
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
  private readonly nodes: ResourceClient<KubeObject>;
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
    this.nodes = kube.resource(RESOURCES.node);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    this.networkInformer = informerFor(this.networks, { ...common, name: 'provisioningnetworks', onEvent: (e) => o.onChanged(objectKey(e.object)) });
    this.podInformer = informerFor(kube.resource<PodObject>(RESOURCES.pod), {
      ...common,
      name: 'pods-on-node',
      selectors: { fieldSelector: `spec.nodeName=${o.nodeName}` },
      // keep only what the agent reads: a pod's spec and status are large
      transform: slimPod,
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

  async setAside(network: ProvisioningNetwork, ip: IpAddress, mac: string): Promise<'bound' | 'pending'> {
    const want = wireHeldClaim(network, ip, mac, this.o.nodeName, formatTime(this.o.clock.wallMs()));
    const id = { namespace: network.namespace, name: want.metadata.name ?? '' };
    let claim = await this.claims.tryGet(id);
    if (!claim) {
      try {
        claim = await this.claims.create(want);
        this.o.logger.warn({ ip: formatIp(ip), mac, pool: network.podPool }, 'set an address aside: another MAC uses it on the wire');
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        claim = await this.claims.tryGet(id);
      }
    }
    const name = claim?.status?.address?.name;
    if (!name) return 'pending';
    const address = await this.addresses.tryGet({ namespace: network.namespace, name });
    return address?.spec?.address === formatIp(ip) ? 'bound' : 'pending';
  }

  async setAsideHere(network: ProvisioningNetwork): Promise<{ name: string; ip: IpAddress }[]> {
    const list = await this.claims.list(network.namespace, { labelSelector: `${IN_USE_ON_WIRE_LABEL},${NETWORK_LABEL}=${network.name}` });
    return list.items.flatMap((c) => {
      const ip = tryParseIp(c.metadata.annotations?.[REQUESTED_IP_ANNOTATION] ?? '');
      return ip && c.metadata.annotations?.['ironet.io/seen-by'] === this.o.nodeName && !c.metadata.deletionTimestamp ? [{ name: c.metadata.name ?? '', ip }] : [];
    });
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

  /** This node's labels as last read, and when (monotonic). */
  private nodeLabelsRead: { readonly labels: Readonly<Record<string, string>>; readonly atMs: number } | undefined;

  /**
   * This node's Node labels (get nodes/<node>), read again at most every
   * NODE_LABELS_TTL_MS: a label changed takes effect within that. Throws when
   * the Node cannot be read.
   */
  async nodeLabels(): Promise<Readonly<Record<string, string>>> {
    const now = this.o.clock.monotonicMs();
    if (this.nodeLabelsRead && now - this.nodeLabelsRead.atMs < NODE_LABELS_TTL_MS) return this.nodeLabelsRead.labels;
    const node = await this.nodes.get({ name: this.o.nodeName }, { signal: AbortSignal.timeout(5000) });
    const labels = node.metadata.labels ?? {};
    this.nodeLabelsRead = { labels, atMs: now };
    return labels;
  }

  /** Per network: the state this node's parent entry last said, and since when. */
  private readonly parentSince = new Map<string, { readonly state: string; readonly since: string }>();

  /** This node's entry in status.parentInterfaces (its own field manager); bounded, never throws. */
  async reportParent(network: ProvisioningNetwork, report: ParentReport): Promise<void> {
    const key = `${network.namespace}/${network.name}`;
    const before = this.parentSince.get(key);
    const since = before?.state === report.state ? before.since : formatTime(this.o.clock.wallMs());
    this.parentSince.set(key, { state: report.state, since });
    const entry = { ...report, lastTransitionTime: since };
    try {
      await this.networks.applyStatus({ namespace: network.namespace, name: network.name }, { status: { parentInterfaces: [entry] } }, parentFieldManager(this.o.nodeName), { signal: AbortSignal.timeout(2000) });
    } catch (err) {
      this.o.logger.warn({ provisioningNetwork: key, err: describeError(err) }, 'could not report the parent interface on the ProvisioningNetwork status');
    }
  }

  /** What this agent last said on each network's status (decided in src/network/agent-status.ts). */
  private readonly said = new Map<string, SaidState>();
  /** The status writes of each network, one after another (a report never overtakes the one before it). */
  private readonly writes = new Map<string, Promise<void>>();

  report(network: ProvisioningNetwork, r: HolderReport): Promise<void> {
    return this.inTurn(network, async () => {
      const key = `${network.namespace}/${network.name}`;
      const now = formatTime(this.o.clock.wallMs());
      const plan = planReport(this.said.get(key), r, now);
      if (plan.kind === 'ignore') return;
      this.said.set(key, plan.state);
      if (plan.kind === 'remember') return;
      if (plan.writeIf === 'always') {
        await this.apply(network, plan.state, now);
        return;
      }
      // a step-down: said only while the status still names this agent (a conflict on the wire: or names nobody),
      // at the resourceVersion that showed it
      let seen = this.networkInformer.get(key);
      for (let attempt = 0; mayWrite(plan.writeIf, seen, r.agent); attempt++) {
        if (attempt === 3) {
          this.o.logger.warn({ provisioningNetwork: key }, 'could not say on the ProvisioningNetwork status that this agent stepped down (it changed under every try); the next holder replaces it');
          return;
        }
        if ((await this.apply(network, plan.state, now, seen?.metadata.resourceVersion)) !== 'conflict') return;
        // the status changed meanwhile: another holder took over (nothing of ours to say), or only the controller wrote
        // (a list by name: the agent's rules grant list and watch, not get)
        seen = await this.networks
          .list(network.namespace, { fieldSelector: `metadata.name=${network.name}` }, AbortSignal.timeout(2000))
          .then((l) => l.items[0])
          .catch((err: unknown) => {
            this.o.logger.warn({ err: describeError(err) }, 'could not read the ProvisioningNetwork again to step down on its status');
            return undefined;
          });
      }
    });
  }

  /**
   * The holder says again what it said when the status no longer shows it (a
   * write that failed, or was replaced by a stepping-down agent's): called on
   * every pass over the network.
   */
  reassert(network: ProvisioningNetwork): Promise<void> {
    return this.inTurn(network, async () => {
      const key = `${network.namespace}/${network.name}`;
      const state = this.said.get(key);
      if (!state || !needsReassert(network, state, this.networkInformer.get(key)?.status)) return;
      await this.apply(network, state, formatTime(this.o.clock.wallMs()));
    });
  }

  private inTurn(network: ProvisioningNetwork, write: () => Promise<void>): Promise<void> {
    const key = `${network.namespace}/${network.name}`;
    const next = (this.writes.get(key) ?? Promise.resolve()).then(write);
    const settled = next.catch(() => undefined);
    this.writes.set(key, settled);
    void settled.then(() => {
      if (this.writes.get(key) === settled) this.writes.delete(key);
    });
    return next;
  }

  private async apply(network: ProvisioningNetwork, said: SaidState, now: string, resourceVersion?: string): Promise<'ok' | 'conflict' | 'failed'> {
    const { status, state } = agentStatus(network, said, this.o.nodeName, now);
    this.said.set(`${network.namespace}/${network.name}`, state);
    try {
      await this.networks.applyStatus({ namespace: network.namespace, name: network.name }, { status }, AGENT_FIELD_MANAGER, { signal: AbortSignal.timeout(2000), resourceVersion });
      return 'ok';
    } catch (err) {
      if (isConflict(err)) return 'conflict';
      this.o.logger.warn({ err: describeError(err), holding: state.holding }, 'could not report on the ProvisioningNetwork status');
      return 'failed';
    }
  }
}
