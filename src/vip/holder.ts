/**
 * What holding the VIP means, as the elector's hooks: install it with a kernel
 * lifetime that ends before any follower may take over, refresh that lifetime
 * after each renew, announce it, and on stepping down stop dependent work,
 * then remove it. Each install passes the deadline (send time of the winning
 * write + renewDeadline) down to the syscall, which refuses it when late.
 *
 * HolderReports puts what the holder tells others (ProvisioningNetwork mode:
 * the network's status) in the one order a reader may see it.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Announcer } from './announcer.js';
import { vipLifetimeSeconds, type ElectionTimings, type FenceReason } from '../election/election.js';
import type { ElectorHooks, ElectorWording, LeadingContext } from '../election/elector.js';
import type { VipMetrics } from './metrics.js';
import type { VipTarget } from './ports.js';

/** What the VIP's election says in its log lines. */
export const VIP_WORDING: ElectorWording = {
  fields: (vip) => ({ component: 'vip', vip }),
  thing: 'the VIP',
  starting: 'installing the VIP',
  stopping: 'removing the VIP',
  stopFailed: 'removing the VIP failed; its kernel lifetime will, and the Lease is left to expire',
};

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

/** What a holder tells others: holding or not, and whether its DHCP serves. Must not throw; keep them short. */
export interface HolderReporter {
  /** After the VIP is installed (true), and after it is removed, before the Lease is released (false). */
  readonly onHolding?: (holding: boolean) => Promise<void>;
  /** A term's DHCP run serves, or failed to start (with why). */
  readonly onDhcp?: (serving: boolean, message: string) => Promise<void>;
}

/**
 * Orders a holder's reports: a term's DHCP outcome is told only after that
 * term's holding report is done (a reader never sees "serving" before
 * "held"); a holding report that finishes after its term ended opens nothing
 * of the next term; "not holding" is told after the VIP is removed, and is
 * awaited, so the next holder's report comes after it. Renewing never waits
 * for a report.
 */
export class HolderReports {
  /** The current term's DHCP gate: opened by the term's holding report (or its end). */
  private gate: { readonly opened: Promise<void>; readonly open: () => void } | undefined;
  /** The holding report of the current term is done: a DHCP start later in the term needs no gate. */
  private holdingSaid = false;
  /** Counts terms, so a late holding report opens nothing of the next. */
  private term = 0;

  constructor(private readonly reporter: HolderReporter) {}

  /** `work` (the DHCP service) with its start's outcome told after the term's holding report. */
  dhcp(work: DependentWork): DependentWork {
    return {
      start: () => {
        let open = (): void => {};
        const opened = new Promise<void>((resolve) => (open = resolve));
        const gate = (this.gate = { opened, open });
        if (this.holdingSaid) gate.open();
        const run = work.start();
        run.ready.then(
          () => gate.opened.then(() => this.reporter.onDhcp?.(true, '')),
          (err: unknown) => gate.opened.then(() => this.reporter.onDhcp?.(false, describeError(err))),
        );
        return run;
      },
    };
  }

  /** The holder's hooks with the holding reports around them. */
  hooks(inner: ElectorHooks): ElectorHooks {
    return {
      ...inner,
      onLeading: async (ctx) => {
        await inner.onLeading(ctx);
        // not awaited: renewing must not wait for a status write; the term's DHCP report waits for this one
        const t = ++this.term;
        void (this.reporter.onHolding?.(true) ?? Promise.resolve()).finally(() => {
          if (t !== this.term) return;
          this.holdingSaid = true;
          this.gate?.open();
        });
      },
      onStopLeading: async (reason) => {
        this.term++;
        this.holdingSaid = false;
        this.gate?.open();
        await inner.onStopLeading(reason);
        await this.reporter.onHolding?.(false);
      },
    };
  }
}
