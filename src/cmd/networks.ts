/**
 * Wires the ProvisioningNetwork capability in the controller: the
 * Kubernetes-backed store (informers), the reconciler, and a work queue keyed
 * by network. Off (with a log line saying why) when the cluster does not serve
 * the ProvisioningNetwork or NetworkAttachmentDefinition APIs.
 */
import { WorkQueue } from '../core/work-queue.js';
import type { KubeClient } from '../kube/kube-client.js';
import { KubeNetworkStore } from '../kube/network-store.js';
import { NetworkReconciler } from '../network/reconciler.js';
import { untilAnswered } from './runtime.js';
import { OFF, runQueued, type QueuedCapabilityOptions, type QueuedRuntime } from './queued.js';

export interface NetworksRuntimeOptions extends QueuedCapabilityOptions {
  /** An Ironic pod this old on a node without an agent is said (NoAgentOnNode). */
  readonly noAgentGraceMs?: number;
  readonly secondPodGraceMs?: number;
}

export type NetworksRuntime = QueuedRuntime;

export async function startNetworks(options: NetworksRuntimeOptions, signal: AbortSignal): Promise<NetworksRuntime> {
  const { kube, clock } = options;
  const logger = options.logger.child({ capability: 'provisioning-networks' });
  const missing = await untilAnswered(() => missingApis(kube), clock, logger, signal);
  if (missing.length > 0) {
    logger.warn({ missing }, 'provisioning networks are off: the cluster does not serve what they need');
    return OFF;
  }
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeNetworkStore(kube, { namespace: options.namespace, clock, logger, events: options.events, onChanged: (key) => queue?.add(key) });
  const reconciler = new NetworkReconciler({ store, clock, logger, noAgentGraceMs: options.noAgentGraceMs, secondPodGraceMs: options.secondPodGraceMs });
  queue = new WorkQueue({ name: 'provisioning-networks', clock, logger, concurrency: 1, process: (key) => reconciler.reconcile(key) });
  const work = queue;
  return runQueued(
    {
      store,
      queue: work,
      clock,
      resyncMs: options.resyncMs,
      everything: () => {
        for (const key of store.networkKeys()) work.add(key);
      },
      onSynced: () => logger.info({ networks: store.networkKeys().length }, 'provisioning network caches synced'),
    },
    signal,
  );
}

async function missingApis(kube: KubeClient): Promise<string[]> {
  const missing: string[] = [];
  if (!(await kube.servesApi('ironet.io', 'v1alpha1'))) missing.push('ironet.io/v1alpha1 (apply charts/ironet/crds/)');
  else if (!(await kube.servesResource('ironet.io', 'v1alpha1', 'provisioningnetworks'))) missing.push('provisioningnetworks.ironet.io (apply charts/ironet/crds/ironet.io_provisioningnetworks.yaml)');
  if (!(await kube.servesApi('k8s.cni.cncf.io', 'v1'))) missing.push('k8s.cni.cncf.io/v1 NetworkAttachmentDefinitions (install Multus)');
  return missing;
}
