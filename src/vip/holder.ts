/**
 * What holding the VIP means, as the elector's hooks: install it with a kernel
 * lifetime that ends before any follower may take over, refresh that lifetime
 * after each renew, announce it, and on stepping down stop dependent work,
 * then remove it. Each install passes the deadline (send time of the winning
 * write + renewDeadline) down to the syscall, which refuses it when late.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Announcer } from './announcer.js';
import { vipLifetimeSeconds, type ElectionTimings, type FenceReason } from '../election/election.js';
import type { ElectorHooks, LeadingContext } from '../election/elector.js';
import type { VipMetrics } from './metrics.js';
import type { VipTarget } from './ports.js';

/** Work that runs only while this node holds the VIP (DHCP, TFTP): one run per term. */
export interface DependentWork {
  /** Starts a run for a new term, once the VIP is up. */
  start(): DependentRun;
}

export interface DependentRun {
  /** Settles when the run serves (or failed to start). */
  readonly ready: Promise<void>;
  /** Stops this run, also while it is still starting; must not throw. Stopping one run never touches another. */
  stop(reason: FenceReason): Promise<void>;
}

export interface HolderOptions {
  readonly target: VipTarget;
  readonly timings: ElectionTimings;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly announcer: Announcer;
  readonly metrics?: VipMetrics;
  readonly name: string;
  readonly dependents?: readonly DependentWork[];
}

/** How long a dependent's start may take before the holder stops waiting for it (logged as an error). */
export const DEPENDENT_START_TIMEOUT_MS = 10_000;
/** How long stepping down waits for each dependent's stop before removing the VIP anyway. */
export const DEPENDENT_STOP_TIMEOUT_MS = 1_000;

export function holderHooks(o: HolderOptions): ElectorHooks {
  /**
   * Dependent work starts in the background: the elector must go on renewing
   * while DHCP loads its leases, and a start that fails or hangs must never
   * keep the VIP from being renewed or removed. Each term (acquire → step
   * down) starts its own runs at its first successful install, and stepping
   * down stops exactly those runs, bounded: the VIP's removal waits at most
   * DEPENDENT_STOP_TIMEOUT_MS for each (its kernel lifetime bounds it anyway).
   */
  let term = 0;
  let leading = false;
  let termStarted = false;
  let runs: DependentRun[] = [];
  const bounded = async (what: string, work: () => Promise<void>, timeoutMs: number, reason: string): Promise<void> => {
    const ac = new AbortController();
    try {
      const outcome = await Promise.race([work().then(() => 'done' as const), o.clock.sleep(timeoutMs, ac.signal).then(() => 'timeout' as const)]);
      if (outcome === 'timeout') o.logger.error({ reason: 'timeout' }, `${what} did not finish within ${timeoutMs} ms; going on without waiting for it`);
    } catch (err) {
      o.logger.error({ err: describeError(err), reason }, `${what} failed`);
    } finally {
      ac.abort();
    }
  };
  const startDependents = async (myTerm: number): Promise<void> => {
    for (const d of o.dependents ?? []) {
      if (term !== myTerm) return;
      let run: DependentRun;
      try {
        run = d.start();
      } catch (err) {
        o.logger.error({ err: describeError(err), reason: 'acquired' }, 'starting dependent work failed');
        continue;
      }
      runs.push(run);
      await bounded('starting dependent work', () => run.ready, DEPENDENT_START_TIMEOUT_MS, 'acquired');
    }
  };
  const install = async (ctx: LeadingContext, why: 'acquired' | 'renewed'): Promise<void> => {
    const now = o.clock.monotonicMs();
    const lifetime = vipLifetimeSeconds(o.timings, ctx.sentMs, now);
    if (lifetime < 1) {
      o.logger.warn({ reason: 'slowRenew', elapsedMs: Math.round(now - ctx.sentMs) }, 'renew too slow to extend the VIP lifetime; it will lapse');
      return;
    }
    const result = await o.target.install(lifetime, ctx.sentMs + o.timings.renewDeadlineMs);
    if (result === 'tooLate') {
      o.metrics?.renewFailures.labels(o.name, 'tooLate').inc();
      o.logger.warn({ reason: 'deadlinePassed' }, 'VIP not installed: the renew deadline had passed');
      return;
    }
    // the term's first install that worked starts its work, even when the address was still there
    const firstOfTerm = leading && !termStarted;
    if (result === 'added' || firstOfTerm) {
      o.logger.info({ reason: why, lifetimeSeconds: lifetime }, `VIP installed: ${o.target.description}`);
      o.announcer.start();
      o.metrics?.owned.labels(o.name).set(1);
    }
    if (firstOfTerm) {
      termStarted = true;
      void startDependents(term);
    }
  };
  return {
    onLeading: (ctx) => {
      leading = true;
      term++;
      termStarted = false;
      return install(ctx, 'acquired');
    },
    onRenewed: (ctx) => install(ctx, 'renewed'),
    onStopLeading: async (reason) => {
      leading = false;
      term++;
      o.announcer.stop();
      const stopping = runs.reverse();
      runs = [];
      for (const r of stopping) await bounded('stopping dependent work', () => r.stop(reason), DEPENDENT_STOP_TIMEOUT_MS, reason);
      const removed = await o.target.remove();
      o.metrics?.owned.labels(o.name).set(0);
      o.logger.info({ reason, removed }, `VIP removed: ${o.target.description}`);
    },
  };
}
