/**
 * The ProvisioningNetwork controller's view of the cluster (the multus
 * capability's NetworkStore port): informers over ProvisioningNetworks, the
 * NetworkAttachmentDefinitions ironet generated (by label), and IPPools; writes
 * go to the API server and are written through to the caches.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { IpPoolObject } from '../ipam/objects.js';
import type { NetworkAttachmentDefinitionObject } from '../multus/nad.js';
import { NETWORK_LABEL, type ProvisioningNetworkObject } from '../multus/network.js';
import type { EventPlan, Reservation, StatusPlan } from '../multus/plan.js';
import type { NetworkSnapshot, NetworkStore, WriteOutcome } from '../multus/ports.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, type Informer } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
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

  constructor(
    kube: KubeClient,
    private readonly o: KubeNetworkStoreOptions,
  ) {
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.networks = kube.resource(RESOURCES.provisioningNetwork);
    this.nads = kube.resource(RESOURCES.networkAttachmentDefinition);
    this.pools = kube.resource(RESOURCES.ipPool);
    this.networkInformer = informerFor(this.networks, { ...common, name: 'provisioningnetworks', onEvent: (e) => o.onChanged(objectKey(e.object)) });
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
  }

  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    const informers = [this.networkInformer, this.nadInformer, this.poolInformer];
    return {
      done: Promise.all(informers.map((i) => i.run(signal))).then(() => undefined),
      synced: Promise.all(informers.map((i) => i.waitForSync(signal))).then(() => undefined),
    };
  }

  notSyncedReason(): string | undefined {
    for (const i of [this.networkInformer, this.nadInformer, this.poolInformer]) if (!i.hasSynced) return i.lastError ?? 'listing';
    return undefined;
  }

  networkKeys(): string[] {
    return this.networkInformer.list().map(objectKey);
  }

  snapshot(key: string): NetworkSnapshot | undefined {
    const object = this.networkInformer.get(key);
    if (!object) return undefined;
    const ns = object.metadata.namespace ?? '';
    const pools = new Map<string, IpPoolObject | undefined>();
    for (const name of [object.spec?.podPool?.name, object.spec?.dhcpPool?.name]) {
      if (typeof name === 'string' && name !== '') pools.set(name, this.poolInformer.get(`${ns}/${name}`));
    }
    const nad = this.nadInformer.get(`${ns}/${object.metadata.name ?? ''}`);
    return { object, pools, nad };
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

  async patchNad(namespace: string, name: string, patch: object): Promise<WriteOutcome> {
    try {
      this.nadInformer.observe(await this.nads.mergePatch({ namespace, name }, patch));
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  async reserve(namespace: string, r: Reservation): Promise<WriteOutcome> {
    try {
      const written = await this.pools.mergePatch({ namespace, name: r.pool }, { spec: { preAllocations: { [r.key]: r.ip } } }, { resourceVersion: r.resourceVersion });
      this.poolInformer.observe(written);
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  async writeStatus(object: ProvisioningNetworkObject, status: StatusPlan): Promise<WriteOutcome> {
    const id = { namespace: object.metadata.namespace, name: object.metadata.name ?? '' };
    const body = {
      status: {
        observedGeneration: status.observedGeneration,
        ...(status.networkAttachmentDefinition ? { networkAttachmentDefinition: status.networkAttachmentDefinition } : {}),
        conditions: status.conditions,
      },
    };
    try {
      this.networkInformer.observe(await this.networks.applyStatus(id, body, CONTROLLER_FIELD_MANAGER));
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
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
      .filter((n) => n.metadata.namespace === namespace && (n.spec?.podPool?.name === pool || n.spec?.dhcpPool?.name === pool))
      .map(objectKey);
  }
}
