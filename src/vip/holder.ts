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

export function holderHooks(o: HolderOptions): ElectorHooks {
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
    if (result === 'added') {
      o.logger.info({ reason: why, lifetimeSeconds: lifetime }, `VIP installed: ${o.target.description}`);
      o.announcer.start();
      o.metrics?.owned.labels(o.name).set(1);
      if (why === 'acquired') for (const d of o.dependents ?? []) await d.start();
    }
  };
  return {
    onLeading: (ctx) => install(ctx, 'acquired'),
    onRenewed: (ctx) => install(ctx, 'renewed'),
    onStopLeading: async (reason) => {
      o.announcer.stop();
      for (const d of [...(o.dependents ?? [])].reverse()) {
        try {
          await d.stop(reason);
        } catch (err) {
          o.logger.error({ err: describeError(err), reason }, 'stopping dependent work failed');
        }
      }
      const removed = await o.target.remove();
      o.metrics?.owned.labels(o.name).set(0);
      o.logger.info({ reason, removed }, `VIP removed: ${o.target.description}`);
    },
  };
}
