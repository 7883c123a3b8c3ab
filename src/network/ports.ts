/**
 * What the ProvisioningNetwork runner needs from the outside world;
 * src/kube/network-store.ts implements it over informers (reads) and the API
 * server (writes, written through to the cache).
 */
import type { IpPoolObject } from '../ipam/objects.js';
import type { NetworkAttachmentDefinitionObject } from './nad.js';
import type { PodObject } from './pods.js';
import type { AgentPresence } from './pod-census.js';
import type { ProvisioningNetworkObject } from './network.js';
import type { EventPlan, Reservation, StatusPlan } from './plan.js';

/** What one pass reads: the network, the pools it names (undefined: not found), the NAD of its name. */
export interface NetworkSnapshot {
  readonly object: ProvisioningNetworkObject;
  readonly pools: ReadonlyMap<string, IpPoolObject | undefined>;
  /** Every pool in the network's namespace. */
  readonly allPools: readonly IpPoolObject[];
  readonly nad: NetworkAttachmentDefinitionObject | undefined;
  readonly others: readonly ProvisioningNetworkObject[];
  readonly counts: { readonly attachedPods: number; readonly leases: number };
  /** Whether the VIP Lease's holder renews it (undefined: no Lease), and the Lease's duration. */
  readonly holderAlive: boolean | undefined;
  readonly leaseDurationMs: number | undefined;
  /** The pods of the network's namespace (slim: pod-census.ts censusPod), and what is known of each node's agent heartbeat. */
  readonly ironicPods: readonly PodObject[];
  readonly agents: ReadonlyMap<string, AgentPresence>;
}

export type WriteOutcome = 'ok' | 'conflict' | 'notFound';

export interface NetworkStore {
  /** Every ProvisioningNetwork in the cache, as `namespace/name`. */
  networkKeys(): string[];
  snapshot(key: string): NetworkSnapshot | undefined;
  createNad(nad: NetworkAttachmentDefinitionObject): Promise<WriteOutcome>;
  patchNad(namespace: string, name: string, patch: object): Promise<WriteOutcome>;
  /** `spec.preAllocations[key] = ip` (a merge of that one key). */
  reserve(namespace: string, r: Reservation): Promise<WriteOutcome>;
  /** Removes `spec.preAllocations[key]` from the pool. */
  unreserve(namespace: string, pool: string, key: string): Promise<WriteOutcome>;
  /** Adds or removes the network's finalizer. */
  setFinalizer(object: ProvisioningNetworkObject, change: 'add' | 'remove'): Promise<WriteOutcome>;
  /** The controller's part of the status (server-side apply: the agents' conditions are kept). */
  writeStatus(object: ProvisioningNetworkObject, status: StatusPlan): Promise<WriteOutcome>;
  /** Never throws. */
  recordEvent(object: ProvisioningNetworkObject, event: EventPlan): Promise<void>;
}
