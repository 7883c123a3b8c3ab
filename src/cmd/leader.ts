/**
 * One active controller among replicas: the VIP's Lease elector (src/vip/)
 * without a VIP. The active one runs the controller's work under a signal that
 * is aborted when it steps down — on shutdown, or when it could not renew for
 * renewDeadline (fenced by its own clock, before any standby may take over).
 * A controller that lost the Lease returns, and its process exits so that a
 * fresh start (empty caches) rejoins the election as a standby.
 */
import type { Registry } from 'prom-client';
import type { ControllerLeaderElection } from '../config/controller.js';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { KubeClient } from '../kube/kube-client.js';
import { CoordinationLease, type LeaseObject } from '../kube/coordination-lease.js';
import { RESOURCES } from '../kube/resources.js';
import { validateTimings } from '../election/election.js';
import { Elector } from '../election/elector.js';
import { createLeaderMetrics } from '../election/metrics.js';

export interface LeaderOptions {
  readonly kube: KubeClient;
  readonly election: ControllerLeaderElection;
  readonly identity: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
}

/** Runs `work` while this replica leads; resolves with why it stopped. */
export async function runAsLeader(o: LeaderOptions, signal: AbortSignal, work: (leading: AbortSignal) => Promise<void>): Promise<'shutdown' | 'lostLease'> {
  const { election, clock } = o;
  const timings = validateTimings({ leaseDurationMs: election.leaseDurationMs, renewDeadlineMs: election.renewDeadlineMs, retryPeriodMs: election.retryPeriodMs }, 'leader-election');
  const logger = o.logger.child({ component: 'leader-election', lease: `${election.namespace}/${election.leaseName}` });
  const gauge = createLeaderMetrics(o.registry).leader;
  gauge.set(0);
  const leases = new CoordinationLease(o.kube.resource<LeaseObject>(RESOURCES.lease), { namespace: election.namespace, name: election.leaseName }, { 'app.kubernetes.io/component': 'controller' }, { clock, logger });
  const elector = new AbortController();
  const stopElector = (): void => elector.abort(signal.reason);
  signal.addEventListener('abort', stopElector, { once: true });
  let running: { abort: AbortController; done: Promise<void> } | undefined;
  let lost = false;
  const e = new Elector({
    leases,
    identity: o.identity,
    timings,
    clock,
    logger,
    name: 'controller',
    wording: {
      thing: "the controller's work",
      starting: "starting the controller's work",
      stopping: "stopping the controller's work",
      stopFailed: "stopping the controller's work failed; the Lease is left to expire",
    },
    hooks: {
      onLeading: () => {
        gauge.set(1);
        logger.info({ identity: o.identity }, 'holding the controller Lease: starting work');
        const abort = new AbortController();
        // not awaited: renewing must not wait for the work
        running = { abort, done: work(abort.signal).catch((err: unknown) => logger.error({ err: describeError(err) }, 'controller work failed')) };
        return Promise.resolve();
      },
      onRenewed: () => Promise.resolve(),
      onStopLeading: async (reason) => {
        const r = running;
        running = undefined;
        gauge.set(0);
        if (!r) return;
        r.abort.abort(new Error(`stepped down: ${reason}`));
        await r.done;
        if (reason !== 'shutdown') {
          lost = true;
          logger.warn({ reason }, 'lost the controller Lease: stopped work; exiting so a fresh start rejoins as a standby');
          stopElector();
        } else logger.info({}, 'stepped down: work stopped, releasing the controller Lease');
      },
    },
  });
  try {
    await e.run(elector.signal);
  } finally {
    signal.removeEventListener('abort', stopElector);
  }
  return lost ? 'lostLease' : 'shutdown';
}
