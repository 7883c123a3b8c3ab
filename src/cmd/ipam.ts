/**
 * Wires the IPAM capability: the Kubernetes-backed store (informers), the
 * reconciler, and a work queue keyed by IPPool, run by the queued
 * capabilities' loop (cmd/queued.ts). Runs until the signal aborts.
 */
import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { WorkQueue } from '../core/work-queue.js';
import { createIpamMetrics } from '../ipam/metrics.js';
import { IpamReconciler } from '../ipam/reconciler.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import { KubeIpamStore } from '../kube/ipam-store.js';
import type { KubeClient } from '../kube/kube-client.js';
import { runQueued, type QueuedRuntime } from './queued.js';
import { untilAnswered } from './runtime.js';

export interface IpamRuntimeOptions {
  readonly kube: KubeClient;
  readonly registry: Registry;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly namespace: string | undefined;
  readonly maxClaimsPerPass?: number;
  readonly writeConcurrency?: number;
  readonly resyncMs?: number;
  readonly random?: () => number;
}

export interface IpamRuntime extends QueuedRuntime {
  readonly capi: boolean;
}

export async function startIpam(options: IpamRuntimeOptions, signal: AbortSignal): Promise<IpamRuntime> {
  const { kube, clock, logger } = options;
  // Five informers, the queue's workers and timers all listen on the one shutdown signal.
  setMaxListeners(64, signal);
  const capi = await untilAnswered(() => kube.servesApi('ipam.cluster.x-k8s.io', 'v1beta2'), clock, logger, signal);
  if (!capi) logger.info({}, 'ipam.cluster.x-k8s.io/v1beta2 is not served: CAPI IPAddressClaims are ignored');
  // CAPI before 1.11 serves Clusters at v1beta1 only
  const clusters = (await untilAnswered(() => kube.servesResource('cluster.x-k8s.io', 'v1beta2', 'clusters'), clock, logger, signal))
    ? ('v1beta2' as const)
    : (await untilAnswered(() => kube.servesResource('cluster.x-k8s.io', 'v1beta1', 'clusters'), clock, logger, signal))
      ? ('v1beta1' as const)
      : undefined;
  if (!clusters) logger.info({}, 'cluster.x-k8s.io Clusters are not served: no pool is paused with its Cluster (clusterctl move pauses Clusters; without CAPI there are none)');
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeIpamStore(kube, {
    namespace: options.namespace,
    clock,
    logger,
    events: options.events,
    capi,
    clusters,
    onPoolChanged: (key) => queue?.add(key),
  });
  const reconciler = new IpamReconciler({
    store,
    clock,
    logger,
    metrics: createIpamMetrics(options.registry),
    random: options.random ?? Math.random,
    maxClaimsPerPass: options.maxClaimsPerPass,
    writeConcurrency: options.writeConcurrency,
  });
  // One pool at a time: overlapping pools must not allocate concurrently.
  queue = new WorkQueue({ name: 'ipam', clock, logger, concurrency: 1, process: (key) => reconciler.reconcile(key) });
  const work = queue;
  // No pass runs before every cache has listed: a pass on a half-filled cache would see addresses as free that are not.
  const running = runQueued(
    {
      store,
      queue: work,
      clock,
      resyncMs: options.resyncMs,
      everything: () => {
        for (const key of store.poolKeys()) work.add(key);
      },
      onSynced: () => logger.info({ pools: store.poolKeys().length }, 'IPAM caches synced'),
    },
    signal,
  );
  return { ...running, capi };
}
