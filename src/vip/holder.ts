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
import { vipLifetimeSeconds, type ElectionTimings, type FenceReason } from './election.js';
import type { ElectorHooks, LeadingContext } from './elector.js';
import type { VipMetrics } from './metrics.js';
import type { VipTarget } from './ports.js';

export interface DependentWork {
  /** Called after the VIP is installed (e.g. start DHCP). */
  start(): Promise<void>;
  /** Called before the VIP is removed (e.g. stop DHCP). Must not throw. */
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
   * down) has a number; a dependent whose start finishes after its term ended
   * is stopped at once. Stops are bounded: the VIP's removal waits at most
   * DEPENDENT_STOP_TIMEOUT_MS for each (its kernel lifetime bounds it anyway).
   */
  let term = 0;
  let running: DependentWork[] = [];
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
      await bounded('starting dependent work', () => d.start(), DEPENDENT_START_TIMEOUT_MS, 'acquired');
      if (term === myTerm) running.push(d);
      else void bounded('stopping dependent work that started after stepping down', () => d.stop('renewDeadlineExceeded'), DEPENDENT_STOP_TIMEOUT_MS, 'lateStart');
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
    // a new term starts its work even when the address was still there (a removal that failed, then a quick re-acquire)
    if (result === 'added' || why === 'acquired') {
      o.logger.info({ reason: why, lifetimeSeconds: lifetime }, `VIP installed: ${o.target.description}`);
      o.announcer.start();
      o.metrics?.owned.labels(o.name).set(1);
      if (why === 'acquired') void startDependents(++term);
    }
  };
  return {
    onLeading: (ctx) => install(ctx, 'acquired'),
    onRenewed: (ctx) => install(ctx, 'renewed'),
    onStopLeading: async (reason) => {
      o.announcer.stop();
      term++;
      const stopping = running.reverse();
      running = [];
      for (const d of stopping) await bounded('stopping dependent work', () => d.stop(reason), DEPENDENT_STOP_TIMEOUT_MS, reason);
      const removed = await o.target.remove();
      o.metrics?.owned.labels(o.name).set(0);
      o.logger.info({ reason, removed }, `VIP removed: ${o.target.description}`);
    },
  };
}
