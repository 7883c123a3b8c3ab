/**
 * Admission of new-lease work (issue 20): who may cost the API server a new
 * lease, and when. Pure: state in memory, time passed in, no I/O.
 *
 * A request is *new-lease work* when its MAC has no lease here and no live
 * offer (a DISCOVER to be offered an address, or a REQUEST that would bind
 * one): every such request ends in pool reservations and lease writes. Known
 * hosts (a BareMetalHost's boot MAC, a MAC with a lease, a static
 * reservation) are never limited: their number is bounded by what the
 * operator declared, so they cannot flood, and they must never be starved by
 * clients nobody declared. Every other MAC passes two token buckets:
 *
 * - its own (`perMacPerSecond`, burst `perMacBurst`): one client hammering
 *   the server gets `macRateLimited`;
 * - the one shared by all unknown MACs (`newLeasesPerSecond`, burst
 *   `newLeasesBurst`): the bound on new leases, hence on API writes, however
 *   many MACs a flood uses. Without a token the request waits in a FIFO of
 *   `queueLength` for the next token; a full queue drops it (`queueFull`),
 *   and one that waited `queueMaxWaitMs` is dropped (`queueTimeout`): its
 *   client has retransmitted by then, and the retransmission queues again.
 *
 * Per-MAC buckets are remembered for at most `trackedMacs` MACs (the least
 * recently seen are forgotten first): a forgotten MAC starts with a full
 * bucket, which the shared bucket still bounds, so memory stays bounded under
 * a flood of random MACs.
 *
 * Not guaranteed: fairness among unknown MACs beyond their order of arrival;
 * that a known host's *first* lease finds a free address (the pool's size is
 * the operator's; known-hosts-only mode keeps unknown MACs out entirely).
 */
import type { Mac } from '../core/mac.js';

export interface AdmissionPolicy {
  /** New-lease requests per second one unknown MAC may make (refill of its bucket). */
  readonly perMacPerSecond: number;
  /** Its bucket's size: requests it may make at once. */
  readonly perMacBurst: number;
  /** New-lease requests per second from all unknown MACs together. */
  readonly newLeasesPerSecond: number;
  /** The shared bucket's size. */
  readonly newLeasesBurst: number;
  /** Requests waiting for a shared token; beyond this they are dropped. */
  readonly queueLength: number;
  /** A request that waited this long is dropped (its client has retransmitted). */
  readonly queueMaxWaitMs: number;
  /** Per-MAC buckets remembered at most. */
  readonly trackedMacs: number;
}

export const ADMISSION_DEFAULTS: AdmissionPolicy = {
  perMacPerSecond: 1,
  perMacBurst: 4,
  newLeasesPerSecond: 50,
  newLeasesBurst: 100,
  queueLength: 256,
  queueMaxWaitMs: 2000,
  trackedMacs: 4096,
};

/** Why a request was not admitted; also the `reason` label of ironet_dhcp_admission_dropped_total. */
export type AdmissionDropReason = 'macRateLimited' | 'queueFull' | 'queueTimeout';

export type AdmissionVerdict =
  | { readonly kind: 'admit'; readonly reason: 'knownHost' | 'token' }
  | { readonly kind: 'queue' }
  | { readonly kind: 'drop'; readonly reason: Exclude<AdmissionDropReason, 'queueTimeout'> };

export type Standing = 'known' | 'unknown';

/** A token bucket as a value: `tokens` at `atMs`. */
export interface Bucket {
  readonly tokens: number;
  readonly atMs: number;
}

/**
 * Takes one token from `bucket` at `nowMs` (refilled at `perSecond`, capped
 * at `burst`): the bucket after, and whether a token was there. A clock that
 * went backwards refills nothing.
 */
export function takeToken(bucket: Bucket | undefined, nowMs: number, perSecond: number, burst: number): { readonly ok: boolean; readonly bucket: Bucket } {
  const refilled = refill(bucket, nowMs, perSecond, burst);
  if (refilled.tokens >= 1) return { ok: true, bucket: { tokens: refilled.tokens - 1, atMs: refilled.atMs } };
  return { ok: false, bucket: refilled };
}

/** The bucket at `nowMs`: full when never used. */
export function refill(bucket: Bucket | undefined, nowMs: number, perSecond: number, burst: number): Bucket {
  if (!bucket) return { tokens: burst, atMs: nowMs };
  const elapsed = Math.max(0, nowMs - bucket.atMs);
  return { tokens: Math.min(burst, bucket.tokens + (elapsed * perSecond) / 1000), atMs: Math.max(nowMs, bucket.atMs) };
}

/** What drain() hands back: the queued items now admitted, and those that waited too long. */
export interface Drained<T> {
  readonly admitted: readonly T[];
  readonly expired: readonly T[];
}

interface Waiting<T> {
  readonly item: T;
  readonly sinceMs: number;
}

/** The admission state of one DHCP server (see the file's doc). */
export class NewLeaseAdmission<T> {
  private shared: Bucket | undefined;
  /** MAC → its bucket, least recently seen first. */
  private readonly perMac = new Map<Mac, Bucket>();
  private readonly queue: Waiting<T>[] = [];
  private head = 0;

  constructor(readonly policy: AdmissionPolicy) {
    validateAdmissionPolicy(policy);
  }

  /** Requests waiting for a token. */
  get queued(): number {
    return this.queue.length - this.head;
  }

  /** MACs whose bucket is remembered. */
  get trackedMacs(): number {
    return this.perMac.size;
  }

  /**
   * Whether a new-lease request from `mac` may go ahead now (`admit`), waits
   * in the queue for a token (`queue`: the caller keeps `item` out of its
   * hands until drain() returns it), or is dropped.
   */
  admit(mac: Mac, standing: Standing, item: T, nowMs: number): AdmissionVerdict {
    if (standing === 'known') return { kind: 'admit', reason: 'knownHost' };
    const p = this.policy;
    const own = takeToken(this.perMac.get(mac), nowMs, p.perMacPerSecond, p.perMacBurst);
    this.remember(mac, own.bucket);
    if (!own.ok) return { kind: 'drop', reason: 'macRateLimited' };
    // tokens go to the queue first: a request arriving now never overtakes one waiting
    if (this.queued === 0) {
      const shared = takeToken(this.shared, nowMs, p.newLeasesPerSecond, p.newLeasesBurst);
      this.shared = shared.bucket;
      if (shared.ok) return { kind: 'admit', reason: 'token' };
    }
    if (this.queued >= p.queueLength) return { kind: 'drop', reason: 'queueFull' };
    this.queue.push({ item, sinceMs: nowMs });
    return { kind: 'queue' };
  }

  /** The queued requests admitted by the tokens refilled by `nowMs` (oldest first), and those that waited too long. */
  drain(nowMs: number): Drained<T> {
    const p = this.policy;
    const admitted: T[] = [];
    const expired: T[] = [];
    while (this.head < this.queue.length) {
      const w = this.queue[this.head]!;
      if (nowMs - w.sinceMs >= p.queueMaxWaitMs) {
        expired.push(w.item);
        this.head++;
        continue;
      }
      const shared = takeToken(this.shared, nowMs, p.newLeasesPerSecond, p.newLeasesBurst);
      this.shared = shared.bucket;
      if (!shared.ok) break;
      admitted.push(w.item);
      this.head++;
    }
    this.compact();
    return { admitted, expired };
  }

  /** Milliseconds until drain() can admit the head of the queue (or expire it); undefined when nothing waits. */
  nextDrainInMs(nowMs: number): number | undefined {
    if (this.queued === 0) return undefined;
    const p = this.policy;
    const w = this.queue[this.head]!;
    const untilExpiry = Math.max(0, w.sinceMs + p.queueMaxWaitMs - nowMs);
    const tokens = refill(this.shared, nowMs, p.newLeasesPerSecond, p.newLeasesBurst).tokens;
    const untilToken = tokens >= 1 ? 0 : Math.ceil(((1 - tokens) * 1000) / p.newLeasesPerSecond);
    return Math.min(untilExpiry, untilToken);
  }

  /**
   * What waits and `which` picks (everything when not given), taken out of the
   * queue and handed back in order: a server stopping takes its own requests,
   * nobody will answer them; another subnet's server sharing the queue keeps
   * its place.
   */
  clear(which: (item: T) => boolean = () => true): T[] {
    const waiting = this.queue.slice(this.head);
    const kept = waiting.filter((w) => !which(w.item));
    this.queue.length = 0;
    this.head = 0;
    this.queue.push(...kept);
    return waiting.filter((w) => which(w.item)).map((w) => w.item);
  }

  private remember(mac: Mac, bucket: Bucket): void {
    this.perMac.delete(mac);
    this.perMac.set(mac, bucket);
    while (this.perMac.size > this.policy.trackedMacs) this.perMac.delete(this.perMac.keys().next().value as Mac);
  }

  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** The setting each policy field is given by, for messages (flags in VIP mode). */
export const ADMISSION_SETTINGS: { readonly [K in keyof AdmissionPolicy]: string } = {
  perMacPerSecond: '--dhcp-mac-rate',
  perMacBurst: '--dhcp-mac-burst',
  newLeasesPerSecond: '--dhcp-new-lease-rate',
  newLeasesBurst: '--dhcp-new-lease-burst',
  queueLength: '--dhcp-queue-length',
  queueMaxWaitMs: '--dhcp-queue-max-wait-ms',
  trackedMacs: '--dhcp-tracked-macs',
};

/** A problem with a policy: the field, the setting that gives it, and what is wrong. */
export interface AdmissionProblem {
  readonly field: keyof AdmissionPolicy;
  readonly setting: string;
  readonly message: string;
}

/** The policy's problems (none: usable). Each field positive and finite; the bursts at least 1; a shared burst below the per-MAC one would let one MAC empty it. */
export function admissionProblems(p: AdmissionPolicy): AdmissionProblem[] {
  const problems: AdmissionProblem[] = [];
  const bad = (field: keyof AdmissionPolicy, message: string): void => {
    problems.push({ field, setting: ADMISSION_SETTINGS[field], message });
  };
  for (const field of Object.keys(ADMISSION_SETTINGS) as (keyof AdmissionPolicy)[]) {
    const v = p[field];
    if (!Number.isFinite(v) || v <= 0) bad(field, `must be a positive number, not ${String(v)}`);
  }
  if (problems.length > 0) return problems;
  if (p.perMacBurst < 1) bad('perMacBurst', 'must be at least 1 (a client needs one request)');
  if (p.newLeasesBurst < 1) bad('newLeasesBurst', 'must be at least 1');
  if (p.newLeasesBurst < p.perMacBurst) bad('newLeasesBurst', `must be at least ${ADMISSION_SETTINGS.perMacBurst} (${p.perMacBurst}): one MAC could otherwise take every shared token`);
  if (p.perMacPerSecond > p.newLeasesPerSecond) bad('perMacPerSecond', `must not exceed ${ADMISSION_SETTINGS.newLeasesPerSecond} (${p.newLeasesPerSecond})`);
  return problems;
}

/** Throws (a plain Error naming the setting) when the policy is unusable; callers at start map it to a ConfigError. */
export function validateAdmissionPolicy(p: AdmissionPolicy): void {
  const first = admissionProblems(p)[0];
  if (first) throw new Error(`${first.setting}: ${first.message}`);
}
