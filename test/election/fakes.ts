/**
 * Strict fakes for the VIP elector: one Lease as the API server keeps it
 * (linearizable, resourceVersions, conditional create/update, watchers told of
 * every change in order), a LeasePort per agent with scriptable failures and
 * held (in-flight) writes, recording hooks, a recording logger, and one
 * timeline that orders hook calls and Lease writes of every agent with their
 * clock times.
 *
 * Strict: anything the real API server would reject, or a port used in a way
 * the contract forbids, is recorded in `violations` (and thrown), because the
 * elector catches and logs errors from its port; tests assert the list is empty.
 */
import type { Clock } from '../../src/core/clock.js';
import type { FenceReason, LeaseRecord } from '../../src/election/election.js';
import type { ElectorHooks, LeadingContext } from '../../src/election/elector.js';
import type { LeasePort, LeaseWrite, StoredLease } from '../../src/election/ports.js';

// ---- timeline --------------------------------------------------------------

export type TimelineEvent =
  | { readonly atMs: number; readonly agent: string; readonly kind: 'leading' | 'renewed'; readonly sentMs: number }
  | { readonly atMs: number; readonly agent: string; readonly kind: 'stopLeading'; readonly reason: FenceReason }
  | { readonly atMs: number; readonly agent: string; readonly kind: 'stopLeadingDone'; readonly reason: FenceReason }
  | { readonly atMs: number; readonly agent: string; readonly kind: 'get' }
  | {
      readonly atMs: number;
      readonly agent: string;
      readonly kind: 'create' | 'update';
      readonly record: LeaseRecord;
      readonly timeoutMs: number;
    };

/** Everything the agents did, in the order they did it, with the fake clock's monotonic time. */
export class Timeline {
  readonly events: TimelineEvent[] = [];
  readonly violations: string[] = [];

  constructor(readonly clock: Clock) {}

  add(event: TimelineEvent): void {
    this.events.push(event);
  }

  /** Hook calls only, as compact strings (`A leading@0 sent=0`), for order assertions. */
  hooks(agent?: string): string[] {
    return this.events
      .filter((e) => agent === undefined || e.agent === agent)
      .flatMap((e) => {
        switch (e.kind) {
          case 'leading':
          case 'renewed':
            return [`${e.agent} ${e.kind}@${e.atMs} sent=${e.sentMs}`];
          case 'stopLeading':
            return [`${e.agent} stopLeading@${e.atMs} ${e.reason}`];
          default:
            return [];
        }
      });
  }

  indexOf(predicate: (e: TimelineEvent) => boolean): number {
    return this.events.findIndex(predicate);
  }

  violate(message: string): Error {
    this.violations.push(message);
    return new Error(`strict fake: ${message}`);
  }
}

// ---- the server ------------------------------------------------------------

/** What the API server's validation of a Lease spec would refuse (k8s.io/kubernetes pkg/apis/coordination/validation). */
function invalidRecord(record: LeaseRecord): string | undefined {
  if (record.holderIdentity === '') return 'holderIdentity "" (write undefined to clear it)';
  const seconds = record.leaseDurationSeconds;
  if (seconds !== undefined && (!Number.isInteger(seconds) || seconds <= 0)) return `leaseDurationSeconds ${seconds} must be a positive integer`;
  if (!Number.isInteger(record.leaseTransitions) || record.leaseTransitions < 0) return `leaseTransitions ${record.leaseTransitions} must be a non-negative integer`;
  for (const key of ['acquireTimeMs', 'renewTimeMs'] as const) {
    const v = record[key];
    if (v !== undefined && !Number.isFinite(v)) return `${key} ${v} is not a time`;
  }
  return undefined;
}

/** One Lease, linearizable like etcd: writes are conditional on the resourceVersion, watchers see every change in order. */
export class FakeLeaseServer {
  private current: StoredLease | undefined;
  private version = 100;
  private readonly watchers = new Set<(lease: StoredLease | undefined) => void>();

  constructor(private readonly timeline: Timeline) {}

  get lease(): StoredLease | undefined {
    return this.current;
  }

  read(): StoredLease | undefined {
    return this.current;
  }

  create(record: LeaseRecord): LeaseWrite {
    this.validate(record);
    if (this.current) return { kind: 'conflict' };
    return { kind: 'ok', lease: this.store(record) };
  }

  update(record: LeaseRecord, resourceVersion: string): LeaseWrite {
    this.validate(record);
    if (!resourceVersion) throw this.timeline.violate('update without a resourceVersion (an unconditional write)');
    if (!this.current || this.current.resourceVersion !== resourceVersion) return { kind: 'conflict' };
    return { kind: 'ok', lease: this.store(record) };
  }

  /** A write by someone outside the test's electors (kubectl, an agent not modelled). */
  forceWrite(record: LeaseRecord): StoredLease {
    this.validate(record);
    return this.store(record);
  }

  subscribe(onChange: (lease: StoredLease | undefined) => void): () => void {
    this.watchers.add(onChange);
    return () => this.watchers.delete(onChange);
  }

  private validate(record: LeaseRecord): void {
    const problem = invalidRecord(record);
    if (problem) throw this.timeline.violate(`the API server would reject ${JSON.stringify(record)}: ${problem}`);
  }

  private store(record: LeaseRecord): StoredLease {
    this.version += 1;
    const stored: StoredLease = Object.freeze({ record: Object.freeze({ ...record }), resourceVersion: String(this.version) });
    this.current = stored;
    for (const w of [...this.watchers]) w(stored);
    return stored;
  }
}

// ---- one agent's port ------------------------------------------------------

/** How this agent's requests fare: reach the server, fail on the way (never applied), or wait in flight until released. */
export type RequestMode = 'apply' | 'fail' | 'hold';

interface HeldWrite {
  readonly apply: () => LeaseWrite;
  readonly resolve: (w: LeaseWrite) => void;
  readonly reject: (err: unknown) => void;
}

export class FakeLeasePort implements LeasePort {
  writes: RequestMode = 'apply';
  reads: Exclude<RequestMode, 'hold'> = 'apply';
  private readonly held: HeldWrite[] = [];
  private watchSignal: AbortSignal | undefined;
  private unsubscribe: (() => void) | undefined;
  private paused = false;
  private readonly queued: (StoredLease | undefined)[] = [];
  private deliver: ((lease: StoredLease | undefined) => void) | undefined;

  constructor(
    private readonly server: FakeLeaseServer,
    private readonly timeline: Timeline,
    readonly agent: string,
  ) {}

  get watching(): boolean {
    return this.watchSignal !== undefined && !this.watchSignal.aborted;
  }
  get heldCount(): number {
    return this.held.length;
  }

  get(): Promise<StoredLease | undefined> {
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'get' });
    if (this.reads === 'fail') return Promise.reject(new Error(`${this.agent}: the API server is unreachable (get)`));
    return Promise.resolve(this.server.read());
  }

  create(record: LeaseRecord, timeoutMs: number): Promise<LeaseWrite> {
    this.checkTimeout(timeoutMs);
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'create', record, timeoutMs });
    return this.write(() => this.server.create(record), 'create');
  }

  update(record: LeaseRecord, resourceVersion: string, timeoutMs: number): Promise<LeaseWrite> {
    this.checkTimeout(timeoutMs);
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'update', record, timeoutMs });
    return this.write(() => this.server.update(record, resourceVersion), 'update');
  }

  watch(onChange: (lease: StoredLease | undefined) => void, signal: AbortSignal): void {
    if (this.watching) throw this.timeline.violate(`${this.agent}: watch called twice`);
    if (signal.aborted) return;
    this.watchSignal = signal;
    this.deliver = onChange;
    this.unsubscribe = this.server.subscribe((lease) => {
      if (this.paused) this.queued.push(lease);
      else queueMicrotask(() => this.emit(lease));
    });
    signal.addEventListener('abort', () => this.unsubscribe?.(), { once: true });
    // Like an informer's initial list: the current object, if any.
    const initial = this.server.read();
    if (initial) queueMicrotask(() => this.emit(initial));
  }

  /** Watch events queue up (a slow watch) until {@link resumeWatch}. */
  pauseWatch(): void {
    this.paused = true;
  }
  resumeWatch(): void {
    this.paused = false;
    for (const lease of this.queued.splice(0)) this.emit(lease);
  }

  /** Lets held writes reach the server now (`apply`) or fail on the way (`fail`), and answers them. */
  releaseHeld(outcome: Exclude<RequestMode, 'hold'> = 'apply'): void {
    for (const h of this.held.splice(0)) {
      if (outcome === 'fail') h.reject(new Error(`${this.agent}: the request timed out`));
      else {
        try {
          h.resolve(h.apply());
        } catch (err) {
          h.reject(err);
        }
      }
    }
  }

  private emit(lease: StoredLease | undefined): void {
    if (this.watching) this.deliver?.(lease);
  }

  private write(apply: () => LeaseWrite, op: string): Promise<LeaseWrite> {
    switch (this.writes) {
      case 'apply':
        try {
          return Promise.resolve(apply());
        } catch (err) {
          return Promise.reject(err instanceof Error ? err : new Error(String(err)));
        }
      case 'fail':
        return Promise.reject(new Error(`${this.agent}: the API server is unreachable (${op})`));
      case 'hold':
        return new Promise((resolve, reject) => this.held.push({ apply, resolve, reject }));
    }
  }

  private checkTimeout(timeoutMs: number): void {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw this.timeline.violate(`${this.agent}: write timeout ${timeoutMs} ms`);
  }

  private now(): number {
    return this.timeline.clock.monotonicMs();
  }
}

// ---- hooks -----------------------------------------------------------------

/** Records hook calls on the timeline; onStopLeading can be made slow or failing. Flags hooks that overlap a fence. */
export class RecordingHooks implements ElectorHooks {
  /** What onStopLeading does after recording the call; resolves at once unless a test replaces it. */
  stopBehaviour: (reason: FenceReason) => Promise<void> = () => Promise.resolve();
  /** Between an onLeading and the end of the next onStopLeading (what a holder says in ironet_vip_owned). */
  leading = false;
  private stopping = 0;

  constructor(
    private readonly timeline: Timeline,
    readonly agent: string,
  ) {}

  async onLeading(ctx: LeadingContext): Promise<void> {
    this.checkNoFenceInFlight('onLeading');
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'leading', sentMs: ctx.sentMs });
    this.leading = true;
  }

  async onRenewed(ctx: LeadingContext): Promise<void> {
    this.checkNoFenceInFlight('onRenewed');
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'renewed', sentMs: ctx.sentMs });
  }

  async onStopLeading(reason: FenceReason): Promise<void> {
    this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'stopLeading', reason });
    this.stopping += 1;
    try {
      await this.stopBehaviour(reason);
    } finally {
      this.stopping -= 1;
      this.leading = false;
      this.timeline.add({ atMs: this.now(), agent: this.agent, kind: 'stopLeadingDone', reason });
    }
  }

  /** Makes the next onStopLeading calls wait until the returned function is called. */
  holdStop(): () => void {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    this.stopBehaviour = () => gate;
    return release;
  }

  get stopInFlight(): boolean {
    return this.stopping > 0;
  }

  private checkNoFenceInFlight(hook: string): void {
    if (this.stopping > 0) this.timeline.violations.push(`${this.agent}: ${hook} called while onStopLeading is still removing the VIP`);
  }

  private now(): number {
    return this.timeline.clock.monotonicMs();
  }
}

// ---- logger ----------------------------------------------------------------

export { RecordingLogger, type LogEntry } from '../support/recording-logger.js';
