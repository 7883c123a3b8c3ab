/**
 * Wires the IPAM capability: the Kubernetes-backed store (informers), the
 * reconciler, and a work queue keyed by IPPool. Runs until the signal aborts.
 */
import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { WorkQueue } from '../core/work-queue.js';
import { createIpamMetrics } from '../ipam/metrics.js';
import { IpamReconciler } from '../ipam/reconciler.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import { KubeIpamStore } from '../kube/ipam-store.js';
import type { KubeClient } from '../kube/kube-client.js';

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

export interface IpamRuntime {
  /** Resolves once every informer has listed (the controller is then Ready). */
  readonly synced: Promise<void>;
  readonly done: Promise<void>;
  readonly capi: boolean;
  /** Why IPAM is not ready yet, for /readyz; undefined once synced. */
  notReadyReason(): string | undefined;
}

export async function startIpam(options: IpamRuntimeOptions, signal: AbortSignal): Promise<IpamRuntime> {
  const { kube, clock, logger } = options;
  // Five informers, the queue's workers and timers all listen on the one shutdown signal.
  setMaxListeners(64, signal);
  const capi = await untilAnswered(() => kube.servesApi('ipam.cluster.x-k8s.io', 'v1beta2'), clock, logger, signal);
  if (!capi) logger.info({}, 'ipam.cluster.x-k8s.io/v1beta2 is not served: CAPI IPAddressClaims are ignored');
  const metrics = createIpamMetrics(options.registry);
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeIpamStore(kube, {
    namespace: options.namespace,
    clock,
    logger,
    events: options.events,
    capi,
    onPoolChanged: (key) => queue?.add(key),
  });
  const reconciler = new IpamReconciler({
    store,
    clock,
    logger,
    metrics,
    random: options.random ?? Math.random,
    maxClaimsPerPass: options.maxClaimsPerPass,
    writeConcurrency: options.writeConcurrency,
  });
  queue = new WorkQueue({
    name: 'ipam',
    clock,
    logger,
    // One pool at a time: overlapping pools must not allocate concurrently.
    concurrency: 1,
    process: (key) => reconciler.reconcile(key),
  });
  const work = queue;
  const informers = store.run(signal);
  // No pass runs before every cache has listed: a pass on a half-filled cache
  // would see addresses as free that are not.
  const synced = informers.synced.then(() => {
    logger.info({ pools: store.poolKeys().length }, 'IPAM caches synced');
    for (const key of store.poolKeys()) work.add(key);
  });
  const resync = async (): Promise<void> => {
    const every = options.resyncMs ?? 10 * 60_000;
    for (;;) {
      await clock.sleep(every, signal);
      for (const key of store.poolKeys()) work.add(key);
    }
  };
  const processing = synced.then(
    () => work.run(signal),
    () => undefined, // aborted before the caches synced
  );
  const done = Promise.all([informers.done, processing, resync().catch(() => undefined)]).then(() => undefined);
  let isSynced = false;
  void synced.then(() => (isSynced = true), () => {});
  return { synced, done, capi, notReadyReason: () => (isSynced ? undefined : (store.notSyncedReason() ?? 'starting')) };
}

/** Retries a startup question (discovery) until the API server answers it, or the signal aborts. */
export async function untilAnswered<T>(ask: () => Promise<T>, clock: Clock, logger: Logger, signal: AbortSignal): Promise<T> {
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      return await ask();
    } catch (err) {
      if (signal.aborted) throw err;
      logger.warn({ err: describeError(err), delayMs }, 'API discovery failed; retrying');
      await clock.sleep(delayMs, signal);
    }
  }
}
