/**
 * Wires the network-data capability (DHCP-less hosts) in the controller: the
 * Kubernetes-backed store (informers), the reconciler, and one work queue
 * keyed by host and by template. Off (with a log line saying why) when the
 * cluster does not serve NetworkDataTemplates or BareMetalHosts.
 */
import type { Registry } from 'prom-client';
import { WorkQueue } from '../core/work-queue.js';
import type { KubeClient } from '../kube/kube-client.js';
import { KubeNetdataStore } from '../kube/netdata-store.js';
import { createNetdataMetrics } from '../netdata/metrics.js';
import { hostWorkKey, NetdataReconciler, templateWorkKey } from '../netdata/reconciler.js';
import { untilAnswered } from './runtime.js';
import { OFF, runQueued, type QueuedCapabilityOptions, type QueuedRuntime } from './queued.js';

export interface NetdataRuntimeOptions extends QueuedCapabilityOptions {
  readonly registry: Registry;
  /** Parallel host passes (each is a few API writes). */
  readonly concurrency?: number;
}

export type NetdataRuntime = QueuedRuntime;

export async function startNetdata(options: NetdataRuntimeOptions, signal: AbortSignal): Promise<NetdataRuntime> {
  const { kube, clock } = options;
  const logger = options.logger.child({ capability: 'network-data' });
  const missing = await untilAnswered(() => missingApis(kube), clock, logger, signal);
  if (missing.length > 0) {
    logger.warn({ missing }, 'network data is off: the cluster does not serve what it needs');
    return OFF;
  }
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeNetdataStore(kube, {
    namespace: options.namespace,
    clock,
    logger,
    events: options.events,
    onHostChanged: (key) => queue?.add(hostWorkKey(key)),
    onTemplateChanged: (key) => queue?.add(templateWorkKey(key)),
  });
  const reconciler = new NetdataReconciler({ store, clock, logger, metrics: createNetdataMetrics(options.registry), onTemplateChanged: (key) => queue?.add(templateWorkKey(key)) });
  queue = new WorkQueue({ name: 'network-data', clock, logger, concurrency: options.concurrency ?? 8, process: (key) => reconciler.reconcile(key) });
  const work = queue;
  return runQueued(
    {
      store,
      queue: work,
      clock,
      resyncMs: options.resyncMs,
      everything: () => {
        for (const key of store.hostKeys()) work.add(hostWorkKey(key));
        for (const key of store.templateKeys()) work.add(templateWorkKey(key));
      },
      onSynced: () => logger.info({ templates: store.templateKeys().length, hosts: store.hostKeys().length }, 'network data caches synced'),
      // a Secret deleted by hand is written again
      beforeResync: () => store.forgetSecrets(),
    },
    signal,
  );
}

async function missingApis(kube: KubeClient): Promise<string[]> {
  const missing: string[] = [];
  if (!(await kube.servesApi('ironet.io', 'v1alpha1')) || !(await kube.servesResource('ironet.io', 'v1alpha1', 'networkdatatemplates'))) {
    missing.push('networkdatatemplates.ironet.io (apply charts/ironet/crds/ironet.io_networkdatatemplates.yaml)');
  }
  if (!(await kube.servesApi('metal3.io', 'v1alpha1'))) missing.push('metal3.io/v1alpha1 BareMetalHosts (install the baremetal-operator CRDs)');
  else if (!(await kube.servesResource('metal3.io', 'v1alpha1', 'hardwaredata'))) missing.push('hardwaredata.metal3.io (install the baremetal-operator CRDs of a release that has HardwareData)');
  return missing;
}
