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
import { vipInstallDeadlineMs, vipLifetimeSeconds, type ElectionTimings, type FenceReason } from '../election/election.js';
import type { ElectorHooks, ElectorWording, LeadingContext } from '../election/elector.js';
import type { VipMetrics } from './metrics.js';
import type { VipTarget } from './ports.js';
import type { Claimer } from './wire.js';
import type { HoldingVerdict, WireGuard } from './wire-guard.js';

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
  /** The wire rule (src/vip/wire.ts): a probe before each install, a watch while holding. None: the Lease alone decides. */
  readonly guard?: WireGuard;
  /** Told when the VIP goes on and off (HolderReports). */
  readonly reports?: HolderReports;
  /** Told what the wire said: blocked (not installed), defended, yielded; cleared (installed after being blocked). Must not throw. */
  readonly onWire?: (e: WireEvent) => void;
}

/** What the wire guard did, for the network's status, an Event, a metric. */
export type WireEvent =
  | { readonly outcome: 'blocked'; readonly claimer: Claimer }
  | { readonly outcome: 'defended'; readonly claimer: Claimer; readonly why: 'heldLonger' | 'firstConflict' }
  | { readonly outcome: 'yielded'; readonly claimer: Claimer; readonly why: 'heldLongerThere' | 'claimedAgain' }
  | { readonly outcome: 'cleared' };

/** How long a dependent's start may take before the holder stops waiting for it (logged as an error). */
export const DEPENDENT_START_TIMEOUT_MS = 10_000;
/**
 * How long stepping down waits for the dependents' stops (all at once) before
 * removing the VIP anyway: well inside the fence margin (FENCE_MARGIN_MS,
 * 500 ms), so a holder that must fence removes its VIP before any follower
 * may take over, whatever DHCP or TFTP are doing.
 */
export const DEPENDENT_STOP_TIMEOUT_MS = 250;

export function holderHooks(o: HolderOptions): ElectorHooks {
  /**
   * Dependent work starts in the background: the elector must go on renewing
   * while DHCP loads its leases, and a start that fails or hangs must never
   * keep the VIP from being renewed or removed. Each spell (the VIP installed
   * → removed, within one Lease term or ended by the wire rule) starts its own
   * runs at its first install, and its end stops exactly those runs, bounded:
   * the VIP's removal waits at most DEPENDENT_STOP_TIMEOUT_MS for them all (its
   * kernel lifetime bounds it anyway).
   *
   * With a wire guard, a spell begins only after a probe nobody answered; a
   * holder that is blocked keeps its Lease (no other agent of its cluster
   * churns through the same probe) and probes again at each renew. The guard's
   * verdicts while holding (defend, yield) and the elector's hooks take turns.
   */
  let spell = 0;
  let installed = false;
  /** When the kernel removes the VIP unless a renew extends it (monotonic; set by each install that worked). */
  let lapsesAtMs = Number.POSITIVE_INFINITY;
  /** Who blocked the last probe, until a probe goes through. */
  let blockedBy: Claimer | undefined;
  let runs: DependentRun[] = [];
  let turn: Promise<void> = Promise.resolve();
  let queued = 0;
  /** One at a time; an idle holder runs the work at once (no extra tick before a removal starts). */
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queued === 0 ? work() : turn.then(work);
    queued++;
    turn = next.then(
      () => void queued--,
      () => void queued--,
    );
    return next;
  };
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
  const startDependents = async (mySpell: number): Promise<void> => {
    for (const d of o.dependents ?? []) {
      if (spell !== mySpell) return;
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
  const wire = (e: WireEvent): void => {
    if (e.outcome !== 'cleared') o.metrics?.wireConflicts.labels(o.name, e.claimer.ironet ? 'ironet' : 'other', e.outcome).inc();
    // blocked and yielded leave the VIP off (the next probes are answered); cleared puts it on; defended changes nothing
    if (e.outcome !== 'defended') o.metrics?.wireBlocked.labels(o.name).set(e.outcome === 'cleared' ? 0 : 1);
    o.onWire?.(e);
  };
  const claimerText = (c: Claimer): string => (c.ironet ? `an ironet agent${c.sinceMs ? ` holding it since ${new Date(c.sinceMs).toISOString()}` : ''}` : 'not an ironet agent');
  /** The guard's say before a spell: false when another MAC uses the VIP (told once per claimer). */
  const wireClear = async (): Promise<boolean> => {
    if (!o.guard) return true;
    let claimer: Claimer | undefined;
    try {
      claimer = await o.guard.probe();
    } catch (err) {
      o.logger.warn({ err: describeError(err), reason: 'probeNotSent' }, 'not installing the VIP: the wire could not be asked; asking again at the next renew');
      return false;
    }
    if (claimer) {
      if (blockedBy?.mac !== claimer.mac) {
        o.logger.warn({ reason: 'vipConflictOnWire', mac: claimer.mac, ironet: claimer.ironet }, `not installing the VIP: ${claimer.mac} (${claimerText(claimer)}) answers for it on the wire; holding the Lease and asking again at each renew`);
        wire({ outcome: 'blocked', claimer });
      }
      blockedBy = claimer;
      return false;
    }
    if (blockedBy) {
      o.logger.info({ reason: 'wireClear', mac: blockedBy.mac }, `${blockedBy.mac} no longer answers for the VIP: installing it`);
      blockedBy = undefined;
      wire({ outcome: 'cleared' });
    }
    return true;
  };
  const install = async (ctx: LeadingContext, why: 'acquired' | 'renewed'): Promise<void> => {
    // a VIP whose kernel lifetime ran out (renews too slow to extend it) is gone: its spell ends, and it goes on again
    // only after a new probe, as any install (another holder may have taken it on the wire meanwhile)
    if (installed && o.clock.monotonicMs() >= lapsesAtMs) {
      o.logger.warn({ reason: 'vipLapsed' }, 'the VIP\'s kernel lifetime ran out before a renew extended it: ending this spell, probing again');
      await end('renewDeadlineExceeded');
    }
    if (!installed && !(await wireClear())) return;
    const now = o.clock.monotonicMs();
    const lifetime = vipLifetimeSeconds(o.timings, ctx.sentMs, now);
    if (lifetime < 1) {
      o.logger.warn({ reason: 'slowRenew', elapsedMs: Math.round(now - ctx.sentMs) }, 'renew too slow to extend the VIP lifetime; it will lapse');
      return;
    }
    // the lifetime is safe only if the kernel starts it by this deadline: checked just before the send, and again after it
    const result = await o.target.install(lifetime, vipInstallDeadlineMs(o.timings, ctx.sentMs, lifetime));
    if (result === 'tooLate') {
      o.metrics?.renewFailures.labels(o.name, 'tooLate').inc();
      o.logger.warn({ reason: 'deadlinePassed' }, `VIP not ${installed ? 'refreshed' : 'installed'}: too late for a ${lifetime} s lifetime to end before another agent may take over`);
      return;
    }
    if (result === 'withdrawn') {
      // the kernel may have started the lifetime after the deadline: the VIP was removed, so the spell ends
      o.metrics?.renewFailures.labels(o.name, 'tooLate').inc();
      o.logger.warn({ reason: 'sentLate' }, 'VIP withdrawn: the netlink send returned after the deadline, so its lifetime might outlast the Lease');
      if (installed) await end('renewDeadlineExceeded');
      return;
    }
    lapsesAtMs = now + lifetime * 1000;
    // the spell's first install that worked starts its work, even when the address was still there
    const first = !installed;
    if (first) {
      installed = true;
      o.guard?.hold(o.clock.wallMs(), (v) =>
        void inTurn(() => onVerdict(v)).catch((err: unknown) => o.logger.error({ err: describeError(err), reason: 'wireConflict' }, 'acting on the wire rule failed; the VIP\'s kernel lifetime removes it if it is still up')),
      );
    }
    if (result === 'added' || first) {
      o.logger.info({ reason: why, lifetimeSeconds: lifetime }, `VIP installed: ${o.target.description}`);
      o.announcer.start();
      o.metrics?.owned.labels(o.name).set(1);
    }
    if (first) {
      o.reports?.began();
      void startDependents(spell);
    }
  };
  /** Ends the spell in the safe order: work, VIP, then the report (the Lease, if it goes, after that). */
  const end = async (reason: FenceReason | 'wireConflict'): Promise<void> => {
    const wasInstalled = installed;
    installed = false;
    spell++;
    o.guard?.release();
    if (wasInstalled) o.reports?.ending();
    o.announcer.stop();
    const stopping = runs.reverse();
    runs = [];
    const fence: FenceReason = reason === 'wireConflict' ? 'shutdown' : reason;
    // all at once, bounded together: the VIP goes within the fence margin however many there are
    await bounded('stopping dependent work', () => Promise.all(stopping.map((r) => r.stop(fence))).then(() => undefined), DEPENDENT_STOP_TIMEOUT_MS, reason);
    const removed = await o.target.remove();
    o.metrics?.owned.labels(o.name).set(0);
    o.logger.info({ reason, removed }, `VIP removed: ${o.target.description}`);
    if (wasInstalled) await o.reports?.ended();
  };
  const onVerdict = async (v: HoldingVerdict): Promise<void> => {
    if (!installed) return;
    if (v.action === 'announce') {
      try {
        await o.target.announce(o.guard?.trailer());
      } catch (err) {
        o.logger.debug({ err: describeError(err), mac: v.prober }, 'announcing the VIP to a prober failed');
      }
      return;
    }
    if (v.action === 'defend') {
      o.logger.warn({ reason: 'vipConflictOnWire', mac: v.claimer.mac, ironet: v.claimer.ironet, why: v.why }, `${v.claimer.mac} (${claimerText(v.claimer)}) claims the VIP; this agent keeps it (${v.why === 'heldLonger' ? 'it has held it longer' : 'a first conflict: RFC 5227 defence'}) and announces it once`);
      wire({ outcome: 'defended', claimer: v.claimer, why: v.why });
      try {
        await o.target.announce(o.guard?.trailer());
      } catch (err) {
        o.logger.warn({ err: describeError(err) }, 'announcing the VIP in its defence failed');
      }
      return;
    }
    o.logger.warn({ reason: 'vipConflictOnWire', mac: v.claimer.mac, ironet: v.claimer.ironet, why: v.why }, `${v.claimer.mac} (${claimerText(v.claimer)}) claims the VIP; this agent yields it (${v.why === 'heldLongerThere' ? 'that side has held it longer' : 'it claimed it again within 10 s'}), keeps the Lease and takes the VIP again when nothing else answers for it`);
    await end('wireConflict');
    blockedBy = v.claimer;
    wire({ outcome: 'yielded', claimer: v.claimer, why: v.why });
    // the next renew probes; meanwhile this spell's dependents are stopped
  };
  return {
    onLeading: (ctx) => inTurn(() => install(ctx, 'acquired')),
    onRenewed: (ctx) => inTurn(() => install(ctx, 'renewed')),
    onStopLeading: (reason) =>
      inTurn(async () => {
        if (blockedBy) {
          blockedBy = undefined;
          o.metrics?.wireBlocked.labels(o.name).set(0);
        }
        await end(reason);
      }),
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
 * Orders a holder's reports: a spell's DHCP outcome is told only after that
 * spell's holding report is done (a reader never sees "serving" before
 * "held"); a holding report that finishes after its spell ended opens nothing
 * of the next one; "not holding" is told after the VIP is removed, and is
 * awaited, so the next holder's report comes after it. Renewing never waits
 * for a report. The holder calls began() after a spell's first install,
 * ending() as it starts to end one and ended() once its VIP is removed.
 */
export class HolderReports {
  /** The current spell's DHCP gate: opened by the spell's holding report (or its end). */
  private gate: { readonly opened: Promise<void>; readonly open: () => void } | undefined;
  /** The holding report of the current spell is done: a DHCP start later in it needs no gate. */
  private holdingSaid = false;
  /** Counts spells, so a late holding report opens nothing of the next. */
  private spell = 0;

  constructor(private readonly reporter: HolderReporter) {}

  /** `work` (the DHCP service) with its start's outcome told after the spell's holding report. */
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

  /** The VIP went on: "holding" is told, not awaited (renewing must not wait for a status write). */
  began(): void {
    const s = ++this.spell;
    void (this.reporter.onHolding?.(true) ?? Promise.resolve()).finally(() => {
      if (s !== this.spell) return;
      this.holdingSaid = true;
      this.gate?.open();
    });
  }

  /** The spell ends: a late "holding" opens nothing of it now. */
  ending(): void {
    this.spell++;
    this.holdingSaid = false;
    this.gate?.open();
  }

  /** The VIP is removed: "not holding" is told, and awaited. */
  async ended(): Promise<void> {
    await this.reporter.onHolding?.(false);
  }
}
