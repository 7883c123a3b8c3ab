/**
 * Lease-based leader election as a pure step function: given what this agent
 * has observed of the Lease and of itself, what to do next and why.
 *
 * Semantics follow client-go's leaderelection (leaseDuration, renewDeadline,
 * retryPeriod; expiry judged by the local monotonic time at which a change of
 * the record was *observed*, never by the timestamps written in it; every write
 * conditional on the resourceVersion it was based on), with ironet's changes:
 * - a leader *fences* itself: when its last successful renew was sent more
 *   than renewDeadline ago, it must drop the VIP at once, and renewDeadline is
 *   validated to leave room (fenceMarginMs) before leaseDuration, the earliest
 *   moment a follower may take over;
 * - on shutdown or lost readiness a leader fences first and releases after
 *   (holderIdentity cleared, leaseDurationSeconds 1), so a follower watching
 *   the Lease takes over at once, never while the VIP is still up here.
 *
 * Not guaranteed (see also elector.ts): safety assumes the monotonic clocks of
 * the agents advance at about the same rate (a drift below fenceMarginMs over
 * one leaseDuration is harmless) and that the API server is linearizable for
 * one object (etcd is).
 */
import { ConfigError } from '../core/errors.js';

export interface ElectionTimings {
  /** How long a follower waits after last seeing the record change before it may take over. */
  readonly leaseDurationMs: number;
  /** A leader that has not renewed for this long (since sending) fences itself. */
  readonly renewDeadlineMs: number;
  /** How often a leader renews, and a follower without a watch event re-checks. */
  readonly retryPeriodMs: number;
}

/** The minimum gap between renewDeadline and leaseDuration: the time a fence has to remove the VIP. */
/** The controller's Lease when --leader-election-lease does not name another. */
export const CONTROLLER_LEASE_NAME = 'ironet-controller';

export const FENCE_MARGIN_MS = 500;
/**
 * How late the kernel may remove an address after its lifetime ends, at worst.
 * Its lifetime check runs at the expiry only when nothing else happened: any
 * address added or refreshed in the namespace (on older kernels, on the node)
 * runs the check at once and puts the next one at least 1 s later
 * (ADDRCONF_TIMER_FUZZ_MAX), rounded up by up to 250 ms (ADDRCONF_TIMER_FUZZ).
 * A change just before the VIP's expiry therefore leaves it up to 1.25 s
 * longer (measured on 6.18: 1.82–1.99 s for a 1 s lifetime), plus 50 ms for
 * the kernel's work queue to run.
 */
export const LIFETIME_SLACK_MS = 1300;
/** A 1 s kernel lifetime + its slack + a renew round trip must fit in one lease. */
export const MIN_LEASE_DURATION_MS = 1000 + LIFETIME_SLACK_MS + 100;

/**
 * The latest monotonic time at which the kernel may start a `lifetimeSeconds`
 * lifetime for the VIP after a renew sent at `sentMs` and stay safe: its
 * removal (up to LIFETIME_SLACK_MS late) comes before any follower may take
 * over, and the leader has not passed its renew deadline. The netlink send is
 * refused after it; a send that returns after it is withdrawn (the VIP removed).
 */
export function vipInstallDeadlineMs(timings: ElectionTimings, sentMs: number, lifetimeSeconds: number, slackMs = LIFETIME_SLACK_MS): number {
  return Math.min(sentMs + timings.renewDeadlineMs, sentMs + timings.leaseDurationMs - slackMs - lifetimeSeconds * 1000);
}

/** Checks timings up front, naming the setting and the rule it breaks. */
export function validateTimings(t: ElectionTimings, prefix = 'election'): ElectionTimings {
  const check = (ok: boolean, setting: string, message: string): void => {
    if (!ok) throw new ConfigError(`${prefix}.${setting}`, message);
  };
  check(Number.isFinite(t.retryPeriodMs) && t.retryPeriodMs >= 50, 'retryPeriodMs', `${t.retryPeriodMs} must be at least 50`);
  check(
    t.renewDeadlineMs >= t.retryPeriodMs * 1.2,
    'renewDeadlineMs',
    `${t.renewDeadlineMs} must be at least 1.2 × retryPeriodMs (${t.retryPeriodMs}), so a leader gets more than one try per deadline`,
  );
  check(
    t.leaseDurationMs >= t.renewDeadlineMs + FENCE_MARGIN_MS,
    'leaseDurationMs',
    `${t.leaseDurationMs} must exceed renewDeadlineMs (${t.renewDeadlineMs}) by at least ${FENCE_MARGIN_MS}: the leader removes the VIP in that gap, before any follower may take over`,
  );
  check(
    t.leaseDurationMs >= MIN_LEASE_DURATION_MS,
    'leaseDurationMs',
    `${t.leaseDurationMs} must be at least ${MIN_LEASE_DURATION_MS}: the VIP's kernel lifetime has 1 s steps, and the kernel may remove it up to ${LIFETIME_SLACK_MS} ms late (1 s after any other address change in the pod, +250 ms rounding), all before the Lease may be taken over`,
  );
  return t;
}

/** A Lease's spec as the elector reads and writes it (times in epoch ms). */
export interface LeaseRecord {
  readonly holderIdentity: string | undefined;
  readonly leaseDurationSeconds: number | undefined;
  readonly acquireTimeMs: number | undefined;
  readonly renewTimeMs: number | undefined;
  readonly leaseTransitions: number;
}

export interface ObservedLease {
  /** Undefined when the Lease does not exist. */
  readonly record: LeaseRecord | undefined;
  readonly resourceVersion: string;
  /** Local monotonic time at which this record (by value) was first seen. */
  readonly observedAtMs: number;
}

export interface ElectorState {
  /** Undefined until the Lease has been read once. */
  readonly lease: ObservedLease | undefined;
  readonly leading: boolean;
  /** Monotonic time the last successful acquire or renew was *sent* (the leader's clock for the deadline). */
  readonly lastRenewSentMs: number | undefined;
  /** Readiness (e.g. the local Ironic pod is Ready and the interface is up). */
  readonly candidate: boolean;
  /**
   * A preferred candidate (undefined: yes) takes a free Lease at once; one
   * that is not (an Ironic pod running but not Ready, ADR 0022) only a
   * retryPeriod after the Lease became free, so a preferred candidate watching
   * it wins. It only delays an acquire: the one-holder rule is the Lease's.
   */
  readonly preferred?: boolean;
  readonly stopping: boolean;
  /**
   * The VIP may still be up here though we do not lead (an earlier process, or
   * a removal that failed): the Lease must not be released before it is gone.
   */
  readonly vipMayBeUp?: boolean;
}

export type WaitReason = 'heldByOther' | 'notCandidate' | 'deferring' | 'leading' | 'stopped';
export type FenceReason = 'renewDeadlineExceeded' | 'shutdown' | 'notCandidate' | 'lostLease';

export type Decision =
  | { readonly kind: 'read' }
  | { readonly kind: 'create'; readonly record: LeaseRecord }
  | { readonly kind: 'acquire'; readonly record: LeaseRecord; readonly resourceVersion: string; readonly reason: 'released' | 'expired' | 'heldByMe' }
  | { readonly kind: 'renew'; readonly record: LeaseRecord; readonly resourceVersion: string }
  | { readonly kind: 'fence'; readonly reason: FenceReason }
  | { readonly kind: 'release'; readonly record: LeaseRecord; readonly resourceVersion: string }
  | { readonly kind: 'wait'; readonly untilMs: number; readonly reason: WaitReason };

export interface StepInput {
  readonly state: ElectorState;
  readonly identity: string;
  readonly timings: ElectionTimings;
  readonly nowMs: number;
  /** Wall clock, written into acquireTime/renewTime for people (never used to judge expiry). */
  readonly wallMs: number;
}

const FOREVER = Number.POSITIVE_INFINITY;

export function step({ state, identity, timings, nowMs, wallMs }: StepInput): Decision {
  const { lease } = state;
  const record = lease?.record;
  const durationSeconds = Math.ceil(timings.leaseDurationMs / 1000);

  if (state.leading) {
    if (state.stopping) return { kind: 'fence', reason: 'shutdown' };
    if (!state.candidate) return { kind: 'fence', reason: 'notCandidate' };
    const sent = state.lastRenewSentMs ?? Number.NEGATIVE_INFINITY;
    if (nowMs - sent >= timings.renewDeadlineMs) return { kind: 'fence', reason: 'renewDeadlineExceeded' };
    if (record?.holderIdentity !== identity) return { kind: 'fence', reason: 'lostLease' };
    const renewAt = sent + timings.retryPeriodMs;
    if (nowMs < renewAt) return { kind: 'wait', untilMs: renewAt, reason: 'leading' };
    return { kind: 'renew', record: { ...record, leaseDurationSeconds: durationSeconds, renewTimeMs: wallMs }, resourceVersion: lease!.resourceVersion };
  }

  // Not leading. A record still naming us after we stepped down is released when we are leaving,
  // but never while the VIP may still be up here: then the Lease runs out instead.
  if (record?.holderIdentity === identity && (state.stopping || !state.candidate)) {
    if (state.vipMayBeUp) return { kind: 'fence', reason: state.stopping ? 'shutdown' : 'notCandidate' };
    return {
      kind: 'release',
      record: { ...record, holderIdentity: undefined, leaseDurationSeconds: 1, acquireTimeMs: wallMs, renewTimeMs: wallMs },
      resourceVersion: lease!.resourceVersion,
    };
  }
  if (state.stopping) return { kind: 'wait', untilMs: FOREVER, reason: 'stopped' };
  if (!state.candidate) return { kind: 'wait', untilMs: FOREVER, reason: 'notCandidate' };
  if (!lease) return { kind: 'read' };
  const deferUntil = (freeSinceMs: number): Decision | undefined => {
    const at = freeSinceMs + timings.retryPeriodMs;
    return state.preferred === false && nowMs < at ? { kind: 'wait', untilMs: at, reason: 'deferring' } : undefined;
  };
  if (!record) {
    const deferred = deferUntil(lease.observedAtMs);
    if (deferred) return deferred;
    return {
      kind: 'create',
      record: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTimeMs: wallMs, renewTimeMs: wallMs, leaseTransitions: 0 },
    };
  }
  const holder = record.holderIdentity;
  let reason: 'released' | 'expired' | 'heldByMe';
  if (!holder) reason = 'released';
  else if (holder === identity) reason = 'heldByMe';
  else {
    const durationMs = Math.max(timings.leaseDurationMs, (record.leaseDurationSeconds ?? 0) * 1000);
    const expiresAt = lease.observedAtMs + durationMs;
    if (nowMs < expiresAt) return { kind: 'wait', untilMs: expiresAt, reason: 'heldByOther' };
    reason = 'expired';
  }
  if (reason !== 'heldByMe') {
    const deferred = deferUntil(reason === 'released' ? lease.observedAtMs : lease.observedAtMs + Math.max(timings.leaseDurationMs, (record.leaseDurationSeconds ?? 0) * 1000));
    if (deferred) return deferred;
  }
  return {
    kind: 'acquire',
    reason,
    resourceVersion: lease.resourceVersion,
    record: {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTimeMs: wallMs,
      renewTimeMs: wallMs,
      leaseTransitions: record.leaseTransitions + (holder === identity ? 0 : 1),
    },
  };
}

/** Whether two records are the same by value (a change restarts a follower's expiry clock). */
export function sameRecord(a: LeaseRecord | undefined, b: LeaseRecord | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTimeMs === b.acquireTimeMs &&
    a.renewTimeMs === b.renewTimeMs &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/**
 * The kernel lifetime for the VIP after a renew sent at `sentMs` returned at
 * `nowMs`: whole seconds (the kernel's unit) that end before any follower may
 * take over, counting the renew's round trip and `slackMs` for the kernel's
 * own timer (LIFETIME_SLACK_MS: up to 1.3 s late). 0 means "too late to
 * refresh": let the previous lifetime run out.
 */
export function vipLifetimeSeconds(timings: ElectionTimings, sentMs: number, nowMs: number, slackMs = LIFETIME_SLACK_MS): number {
  const left = timings.leaseDurationMs - (nowMs - sentMs) - slackMs;
  return Math.max(0, Math.floor(left / 1000));
}
