/**
 * The run loop a queued controller capability shares (provisioning networks,
 * network data): informers list, every key is queued once they have, the work
 * queue runs until shutdown, and every key is queued again each resync.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { WorkQueue } from '../core/work-queue.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import type { KubeClient } from '../kube/kube-client.js';

/** What a queued capability is started with. */
export interface QueuedCapabilityOptions {
  readonly kube: KubeClient;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Watch one namespace, or all when undefined. */
  readonly namespace: string | undefined;
  readonly resyncMs?: number;
}

export interface QueuedRuntime {
  /** False when the APIs it needs are not served (then it does nothing). */
  readonly enabled: boolean;
  readonly synced: Promise<void>;
  readonly done: Promise<void>;
  /** Why it is not ready yet, for /readyz; undefined once synced (or off). */
  notReadyReason(): string | undefined;
}

export const OFF: QueuedRuntime = { enabled: false, synced: Promise.resolve(), done: Promise.resolve(), notReadyReason: () => undefined };

export interface QueuedOptions {
  readonly store: { run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> }; notSyncedReason(): string | undefined };
  readonly queue: WorkQueue;
  readonly clock: Clock;
  /** Queues every key the store knows. */
  readonly everything: () => void;
  /** Called once the caches have synced (before the first keys are queued): a log line. */
  readonly onSynced: () => void;
  /** Called before each resync's keys are queued. */
  readonly beforeResync?: () => void;
  /** Every key is queued again this often; default 10 minutes. */
  readonly resyncMs?: number;
}

const RESYNC_MS = 10 * 60_000;

export function runQueued(o: QueuedOptions, signal: AbortSignal): QueuedRuntime {
  const informers = o.store.run(signal);
  let isSynced = false;
  const synced = informers.synced.then(() => {
    isSynced = true;
    o.onSynced();
    o.everything();
  });
  const resync = async (): Promise<void> => {
    for (;;) {
      await o.clock.sleep(o.resyncMs ?? RESYNC_MS, signal);
      o.beforeResync?.();
      o.everything();
    }
  };
  const processing = synced.then(
    () => o.queue.run(signal),
    () => undefined,
  );
  return {
    enabled: true,
    synced,
    done: Promise.all([informers.done, processing, resync().catch(() => undefined)]).then(() => undefined),
    notReadyReason: () => (isSynced ? undefined : (o.store.notSyncedReason() ?? 'starting')),
  };
}
