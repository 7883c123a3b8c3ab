/**
 * Wires the ProvisioningNetwork capability in the controller: the
 * Kubernetes-backed store (informers), the reconciler, and a work queue keyed
 * by network. Off (with a log line saying why) when the cluster does not serve
 * the ProvisioningNetwork or NetworkAttachmentDefinition APIs.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { WorkQueue } from '../core/work-queue.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import type { KubeClient } from '../kube/kube-client.js';
import { KubeNetworkStore } from '../kube/network-store.js';
import { NetworkReconciler } from '../multus/reconciler.js';
import { untilAnswered } from './ipam.js';

export interface NetworksRuntimeOptions {
  readonly kube: KubeClient;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly namespace: string | undefined;
  readonly resyncMs?: number;
}

export interface NetworksRuntime {
  /** False when the APIs it needs are not served (then it does nothing). */
  readonly enabled: boolean;
  readonly synced: Promise<void>;
  readonly done: Promise<void>;
  notReadyReason(): string | undefined;
}

export async function startNetworks(options: NetworksRuntimeOptions, signal: AbortSignal): Promise<NetworksRuntime> {
  const { kube, clock } = options;
  const logger = options.logger.child({ capability: 'provisioning-networks' });
  const missing = await untilAnswered(() => missingApis(kube), clock, logger, signal);
  if (missing.length > 0) {
    logger.warn({ missing }, 'provisioning networks are off: the cluster does not serve what they need');
    return { enabled: false, synced: Promise.resolve(), done: Promise.resolve(), notReadyReason: () => undefined };
  }
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeNetworkStore(kube, { namespace: options.namespace, clock, logger, events: options.events, onChanged: (key) => queue?.add(key) });
  const reconciler = new NetworkReconciler({ store, clock, logger });
  queue = new WorkQueue({ name: 'provisioning-networks', clock, logger, concurrency: 1, process: (key) => reconciler.reconcile(key) });
  const work = queue;
  const informers = store.run(signal);
  const synced = informers.synced.then(() => {
    logger.info({ networks: store.networkKeys().length }, 'provisioning network caches synced');
    for (const key of store.networkKeys()) work.add(key);
  });
  const resync = async (): Promise<void> => {
    for (;;) {
      await clock.sleep(options.resyncMs ?? 10 * 60_000, signal);
      for (const key of store.networkKeys()) work.add(key);
    }
  };
  const processing = synced.then(
    () => work.run(signal),
    () => undefined,
  );
  let isSynced = false;
  void synced.then(() => (isSynced = true), () => {});
  return {
    enabled: true,
    synced,
    done: Promise.all([informers.done, processing, resync().catch(() => undefined)]).then(() => undefined),
    notReadyReason: () => (isSynced ? undefined : (store.notSyncedReason() ?? 'starting')),
  };
}

async function missingApis(kube: KubeClient): Promise<string[]> {
  const missing: string[] = [];
  if (!(await kube.servesApi('ironet.io', 'v1alpha1'))) missing.push('ironet.io/v1alpha1 (apply charts/ironet/crds/)');
  else if (!(await servesResource(kube, 'ironet.io', 'v1alpha1', 'provisioningnetworks'))) missing.push('provisioningnetworks.ironet.io (apply charts/ironet/crds/ironet.io_provisioningnetworks.yaml)');
  if (!(await kube.servesApi('k8s.cni.cncf.io', 'v1'))) missing.push('k8s.cni.cncf.io/v1 NetworkAttachmentDefinitions (install Multus)');
  return missing;
}

export async function servesResource(kube: KubeClient, group: string, version: string, plural: string): Promise<boolean> {
  const list = await kube.rest.request<{ resources?: { name?: string }[] }>({ method: 'GET', path: `/apis/${group}/${version}` });
  return (list.resources ?? []).some((r) => r.name === plural);
}
