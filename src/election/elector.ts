/**
 * The runner of election.ts: reads and watches the Lease, writes it when the
 * step function says so, and calls the VIP hooks in the one safe order.
 *
 * Guarantees (each has a test):
 * - The VIP is installed only after a successful acquire or renew, and only
 *   while that write was sent less than renewDeadlineMs ago (the deadline is
 *   re-checked inside the install's syscall path).
 * - A fence timer removes the VIP at lastRenewSent + renewDeadline even while a
 *   renew request is still in flight; the kernel lifetime installed with the VIP
 *   removes it even if this process is killed or frozen.
 * - On shutdown or lost readiness: dependent work stops and the VIP goes, then
 *   the Lease is released, so a watching follower takes over at once.
 * - Followers watch the Lease and act on a release the moment they see it.
 *
 * Not guaranteed:
 * - If this process is frozen in the microseconds between the install's
 *   deadline check and its syscall, the VIP may be installed late; it then
 *   lives at most its kernel lifetime (≤ leaseDuration).
 * - Clients' ARP caches: a new holder announces itself (gratuitous ARP / NA),
 *   but a client that ignores announcements reaches the VIP only when its cache
 *   entry expires.
 * - When the API server is unreachable for every agent, nobody can renew: the
 *   holder drops the VIP after renewDeadline and there is no holder until the
 *   API server is back (ADR 0007). Availability yields to the one-holder rule.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { sameRecord, step, type Decision, type ElectionTimings, type ElectorState, type FenceReason, type ObservedLease } from './election.js';
import type { ElectionMetrics } from './metrics.js';
import type { LeasePort, StoredLease } from './ports.js';

export interface LeadingContext {
  /** Monotonic time the winning write was sent: the VIP deadline is sentMs + renewDeadlineMs. */
  readonly sentMs: number;
}

export interface ElectorHooks {
  /** Became the holder: install the VIP, announce it, start dependent work. */
  onLeading(ctx: LeadingContext): Promise<void>;
  /** Renewed: refresh the VIP's kernel lifetime. */
  onRenewed(ctx: LeadingContext): Promise<void>;
  /** Stop dependent work and remove the VIP. Runs before the Lease is released. Must not throw. */
  onStopLeading(reason: FenceReason): Promise<void>;
}

export interface ElectorOptions {
  readonly leases: LeasePort;
  readonly identity: string;
  readonly timings: ElectionTimings;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly hooks: ElectorHooks;
  readonly metrics?: ElectionMetrics;
  /** Label for metrics and logs (the VIP, or "controller"). */
  readonly name: string;
  /** What holding the Lease guards, for log lines (the VIP's: VIP_WORDING in src/vip/holder.ts). */
  readonly wording: ElectorWording;
  readonly initialCandidate?: boolean;
}

/** How log lines name what the Lease guards, and the log fields that say whose election it is. */
export interface ElectorWording {
  /** Log fields every line carries, e.g. `{ component: 'vip', vip: '172.22.0.2' }`. */
  readonly fields: (name: string) => Readonly<Record<string, string>>;
  readonly thing: string;
  readonly starting: string;
  readonly stopping: string;
  readonly stopFailed: string;
}

export class Elector {
  private state: ElectorState;
  private wake: (() => void) | undefined;
  private fencing: Promise<void> | undefined;
  /** The last attempt to remove the VIP failed (the Lease must then run out, not be released). */
  private removalFailed = false;
  private fenceTimer: AbortController | undefined;
  /** Monotonic time the Lease was first seen free (released or expired), for the takeover metric. */
  private freeSinceMs: number | undefined;
  private readonly log: Logger;
  private readonly words: ElectorWording;

  constructor(private readonly options: ElectorOptions) {
    // vipMayBeUp: after a restart we cannot know; the first release removes it first.
    this.state = { lease: undefined, leading: false, lastRenewSentMs: undefined, candidate: options.initialCandidate ?? true, stopping: false, vipMayBeUp: true };
    this.log = options.logger.child(options.wording.fields(options.name));
    this.words = options.wording;
  }

  get leading(): boolean {
    return this.state.leading;
  }

  /** Readiness changed (e.g. the interface went down): re-evaluate at once. A candidate not `preferred` defers to preferred ones for a free Lease. */
  setCandidate(candidate: boolean, preferred = true): void {
    if (candidate === this.state.candidate && preferred === (this.state.preferred ?? true)) return;
    if (candidate !== this.state.candidate) this.log.info({ reason: candidate ? 'ready' : 'notReady' }, candidate ? 'candidate again' : 'no longer a candidate');
    this.state = { ...this.state, candidate, preferred };
    this.wake?.();
  }

  /** Runs until `signal` aborts, then steps down (VIP removed, then Lease released) and returns. */
  async run(signal: AbortSignal): Promise<void> {
    const { leases, clock } = this.options;
    const watchAbort = new AbortController();
    leases.watch((lease) => {
      this.observe(lease);
      this.wake?.();
    }, watchAbort.signal);
    const onAbort = (): void => {
      this.state = { ...this.state, stopping: true };
      this.wake?.();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    try {
      for (;;) {
        if (this.fencing) await this.fencing; // a fence from the timer finishes before anything else happens
        const decision = step({
          state: this.state,
          identity: this.options.identity,
          timings: this.options.timings,
          nowMs: clock.monotonicMs(),
          wallMs: clock.wallMs(),
        });
        if (decision.kind === 'wait' && decision.reason === 'stopped') break;
        if (decision.kind === 'fence' && !this.state.leading) {
          // Not leading, but the VIP may be up (a restart, or a removal that failed): remove it before
          // any release. On the way out, one failure is enough: the Lease is left to run out.
          if (this.state.stopping && this.removalFailed) break;
          if (!(await this.removeLeftover(decision.reason)) && this.state.stopping) break;
          continue;
        }
        try {
          await this.execute(decision);
        } catch (err) {
          this.log.warn({ err: describeError(err), reason: decision.kind }, 'election step failed; retrying');
          if (this.state.stopping && decision.kind === 'release') break; // best effort on the way out
          await this.sleepUntil(clock.monotonicMs() + Math.min(this.options.timings.retryPeriodMs, this.msToDeadline()));
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      watchAbort.abort();
      this.fenceTimer?.abort();
      if (this.state.leading) await this.fence('shutdown');
      if (this.fencing) await this.fencing;
    }
  }

  private msToDeadline(): number {
    if (!this.state.leading || this.state.lastRenewSentMs === undefined) return Number.POSITIVE_INFINITY;
    return Math.max(1, this.state.lastRenewSentMs + this.options.timings.renewDeadlineMs - this.options.clock.monotonicMs());
  }

  private async execute(d: Decision): Promise<void> {
    const { leases, clock, timings } = this.options;
    switch (d.kind) {
      case 'read':
        this.observe(await leases.get());
        return;
      case 'create':
      case 'acquire': {
        const sent = clock.monotonicMs();
        if (d.kind === 'acquire' && d.reason === 'expired' && this.state.lease) {
          this.freeSinceMs ??= this.state.lease.observedAtMs + timings.leaseDurationMs;
        }
        const r = d.kind === 'create' ? await leases.create(d.record, timings.renewDeadlineMs) : await leases.update(d.record, d.resourceVersion, timings.renewDeadlineMs);
        if (r.kind === 'conflict') {
          this.log.debug({ reason: 'conflict' }, 'another agent wrote the Lease first');
          this.observe(await leases.get());
          return;
        }
        this.observe(r.lease);
        if (clock.monotonicMs() - sent >= timings.renewDeadlineMs) return; // won too late to use it; the next step renews or fences
        await this.becomeLeader(sent, d.kind === 'acquire' ? d.reason : 'created');
        return;
      }
      case 'renew': {
        const sent = clock.monotonicMs();
        const timeoutMs = Math.max(1, (this.state.lastRenewSentMs ?? sent) + timings.renewDeadlineMs - sent);
        let r;
        try {
          r = await leases.update(d.record, d.resourceVersion, timeoutMs);
        } catch (err) {
          this.options.metrics?.renewFailures.labels(this.options.name, 'error').inc();
          throw err;
        }
        if (r.kind === 'conflict') {
          this.options.metrics?.renewFailures.labels(this.options.name, 'conflict').inc();
          this.observe(await leases.get());
          return;
        }
        this.observe(r.lease);
        if (!this.state.leading || clock.monotonicMs() - sent >= timings.renewDeadlineMs) {
          this.options.metrics?.renewFailures.labels(this.options.name, 'tooLate').inc();
          return; // fenced meanwhile: a fresh acquire (and a fresh deadline) comes first
        }
        this.state = { ...this.state, lastRenewSentMs: sent };
        this.armFence();
        await this.options.hooks.onRenewed({ sentMs: sent });
        return;
      }
      case 'fence':
        await this.fence(d.reason);
        return;
      case 'release': {
        const r = await leases.update(d.record, d.resourceVersion, timings.renewDeadlineMs);
        if (r.kind === 'ok') {
          this.log.info({ reason: 'released' }, 'Lease released');
          this.observe(r.lease);
        } else this.observe(await leases.get());
        return;
      }
      case 'wait':
        await this.sleepUntil(d.untilMs);
        return;
    }
  }

  /** Calls onStopLeading outside leadership (a VIP left by an earlier process); true when it succeeded. */
  private async removeLeftover(reason: FenceReason): Promise<boolean> {
    try {
      await this.options.hooks.onStopLeading(reason);
      this.state = { ...this.state, vipMayBeUp: false };
      this.removalFailed = false;
      return true;
    } catch (err) {
      this.removalFailed = true;
      this.log.error({ err: describeError(err), reason }, `could not make sure ${this.words.thing} is gone; the Lease will run out instead of being released`);
      if (!this.state.stopping) await this.sleepUntil(this.options.clock.monotonicMs() + this.options.timings.retryPeriodMs);
      return false;
    }
  }

  private async becomeLeader(sentMs: number, reason: string): Promise<void> {
    this.state = { ...this.state, leading: true, lastRenewSentMs: sentMs, vipMayBeUp: true };
    this.armFence();
    const now = this.options.clock.monotonicMs();
    this.options.metrics?.transitions.labels(this.options.name, 'acquired', reason).inc();
    if (this.freeSinceMs !== undefined) this.options.metrics?.takeover.labels(this.options.name).observe((now - this.freeSinceMs) / 1000);
    this.freeSinceMs = undefined;
    this.log.info({ reason }, `acquired the Lease: ${this.words.starting}`);
    // whether the VIP is on (ironet_vip_owned) is the holder's to say: the wire may keep it off while this leads
    await this.options.hooks.onLeading({ sentMs });
  }

  /** Stops leading: dependent work stops and the VIP goes. Idempotent and safe to call from the timer. */
  private fence(reason: FenceReason): Promise<void> {
    if (this.fencing) return this.fencing;
    if (!this.state.leading) return Promise.resolve();
    this.state = { ...this.state, leading: false };
    this.fenceTimer?.abort();
    this.log.info({ reason }, `stepping down: ${this.words.stopping}`);
    this.options.metrics?.transitions.labels(this.options.name, 'lost', reason).inc();
    this.fencing = Promise.resolve()
      .then(() => this.options.hooks.onStopLeading(reason))
      .then(
        () => {
          this.state = { ...this.state, vipMayBeUp: false };
          this.removalFailed = false;
        },
        (err: unknown) => {
          this.removalFailed = true;
          // vipMayBeUp stays true: no release; the Lease runs out, the kernel lifetime removes the VIP
          this.log.error({ err: describeError(err), reason }, this.words.stopFailed);
        },
      )
      .finally(() => {
        this.fencing = undefined;
        this.wake?.();
      });
    return this.fencing;
  }

  /** A timer at the renew deadline that fences even while the loop is waiting on a slow request. */
  private armFence(): void {
    this.fenceTimer?.abort();
    const ac = new AbortController();
    this.fenceTimer = ac;
    const delay = this.msToDeadline();
    this.options.clock.sleep(delay, ac.signal).then(
      () => {
        if (this.state.leading && this.msToDeadline() <= 1) void this.fence('renewDeadlineExceeded');
      },
      () => {},
    );
  }

  private observe(lease: StoredLease | undefined): void {
    const now = this.options.clock.monotonicMs();
    const previous = this.state.lease;
    const changed = !previous || !sameRecord(previous.record, lease?.record);
    const observed: ObservedLease = {
      record: lease?.record,
      resourceVersion: lease?.resourceVersion ?? '',
      observedAtMs: changed ? now : previous.observedAtMs,
    };
    this.state = { ...this.state, lease: observed };
    if (changed && !this.state.leading && !lease?.record.holderIdentity) this.freeSinceMs ??= now;
    if (changed && lease?.record.holderIdentity && lease.record.holderIdentity !== this.options.identity) this.freeSinceMs = undefined;
  }

  private sleepUntil(untilMs: number): Promise<void> {
    const delay = untilMs - this.options.clock.monotonicMs();
    if (delay <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const ac = new AbortController();
      const done = (): void => {
        ac.abort();
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      if (Number.isFinite(delay)) this.options.clock.sleep(delay, ac.signal).then(done, () => {});
    });
  }
}

