/**
 * The IPAM runner: one pass per IPPool key, applying the plans of plan.ts
 * through the IpamStore port.
 *
 * Order within a pass, and why:
 * 1. Releases: a deleted claim's addresses are deleted before its finalizer is
 *    removed, so an address never outlives the knowledge of its claim.
 * 2. Commit: new status.indexes entries are written to the pool, conditional on
 *    its resourceVersion, *before* any address is created. The pool object thus
 *    serialises every controller allocating from it: a loser re-reads and
 *    re-plans. Names (<prefix>-<ip>) then lock each address within its kind.
 * 3. Per claim, in parallel: our finalizer on the claim, the address, then the
 *    claim's status. A crash between steps leaves an index entry or an address
 *    that the next pass adopts; nothing is handed out twice.
 * Conflicts and AlreadyExists are retried inside the pass or by requeueing,
 * never shown to users.
 */
import type { Clock } from '../core/clock.js';
import { mapConcurrent } from '../core/concurrency.js';
import { describeError, retryPolicyFor } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { WorkOutcome } from '../core/work-queue.js';
import { countError, type IpamMetrics } from './metrics.js';
import { BMH_LABEL, capm3HostOf, NETDATA_HOST_LABEL } from './handover.js';
import { planAllocation, planRelease } from './plan.js';
import type { PoolProblem } from './pool-spec.js';
import type { IpamStore } from './ports.js';
import { kindKey, type AllocationPlan, type Binding, type ClaimKind, type ClaimState, type PoolKey, type PoolSnapshot } from './types.js';

interface MutableVerified {
  readonly absentClaims: Set<string>;
  readonly absentAddresses: Set<string>;
  readonly liveClaimUids: Map<string, string>;
  readonly claimHosts: Map<string, string>;
}

/** Upstream's text when the address object cannot be created. */
const CREATE_FAILED = 'Failed to create associated IPAddress object';

export interface IpamReconcilerOptions {
  readonly store: IpamStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: IpamMetrics;
  readonly random: () => number;
  /** New addresses per pass (default 500); 1 mimics upstream's claim-at-a-time flow. */
  readonly maxClaimsPerPass?: number;
  /** API writes in flight at once within a pass (default 32). */
  readonly writeConcurrency?: number;
}

type BindResult = 'bound' | 'skipped' | 'retry';

const MAX_COMMIT_ATTEMPTS = 8;

export class IpamReconciler {
  private readonly reported = new Map<PoolKey, string>();
  private readonly log: Logger;

  constructor(private readonly options: IpamReconcilerOptions) {
    this.log = options.logger.child({ component: 'ipam' });
  }

  async reconcile(key: PoolKey): Promise<WorkOutcome> {
    const started = this.options.clock.monotonicMs();
    let result = 'error';
    try {
      const outcome = await this.pass(key);
      result = outcome.kind;
      return outcome;
    } finally {
      this.options.metrics.reconcileDuration.labels(result).observe((this.options.clock.monotonicMs() - started) / 1000);
    }
  }

  private async pass(key: PoolKey): Promise<WorkOutcome> {
    const { store } = this.options;
    let snap = store.snapshot(key);
    if (!snap) return this.forgetPool(key);
    // Paused: nothing to do; removing the annotation is a pool change and brings the pool back.
    if (snap.pool.paused) return { kind: 'done' };
    const verified: MutableVerified = { absentClaims: new Set(), absentAddresses: new Set(), liveClaimUids: new Map(), claimHosts: new Map() };
    let retry = false;
    if (!(await this.resolveHosts(snap, verified))) return { kind: 'retry', reason: 'a live read failed' };

    // 1. Releases.
    let release = planRelease(snap, verified);
    if (release.verifyClaims.length > 0) {
      if (!(await this.verifyClaims(snap.pool, release.verifyClaims, verified))) return { kind: 'retry', reason: 'a live read failed' };
      snap = store.snapshot(key);
      if (!snap) return this.forgetPool(key);
      release = planRelease(snap, verified);
    }
    const concurrency = this.options.writeConcurrency ?? 32;
    const released = await mapConcurrent(release.releases, concurrency, async ({ claim, addresses, handOver }) => {
      for (const a of addresses) await store.deleteAddress(a);
      // the host's other claim takes the address object over: same name, so its status stays as it is; the
      // pool's index keeps the address under that claim meanwhile (ADR 0019)
      for (const h of handOver) {
        await store.deleteAddress(h.address);
        const created = await store.createAddress(snap!.pool, h.to, h.desired);
        if (created.kind === 'exists' && created.address.claimName !== h.to.name) throw new Error(`IPAddress ${h.desired.name} was taken while handing it over to ${h.to.name}`);
        this.log.info({ claim: h.to.name, pool: key, ip: h.address.address, reason: 'handedOver' }, 'took over the address object of a released claim of the same host');
      }
      const r = await store.setClaimFinalizer(claim, 'remove');
      if (r.kind === 'conflict') throw new Error(`claim ${claim.name} changed while releasing`);
      verified.absentClaims.add(kindKey(claim.kind, claim.name)); // no other finalizer: it is gone now
      this.options.metrics.releases.labels(claim.kind).inc(addresses.length);
      if (addresses.length > 0) this.log.info({ claim: claim.name, pool: key, ip: addresses.map((a) => a.address).join(',') }, 'released');
    });
    const orphaned = await mapConcurrent(release.orphans, concurrency, async (a) => {
      await store.deleteAddress(a);
      this.options.metrics.releases.labels(a.claimKind).inc();
      this.log.info({ claim: a.claimName, pool: key, ip: a.address, reason: 'claimGone' }, 'released an address whose claim is gone');
    });
    for (const r of [...released, ...orphaned]) {
      if (!r.ok) {
        retry = true;
        this.log.warn({ pool: key, err: describeError(r.error) }, 'release failed; will retry');
      }
    }

    // 2. Plan and commit the pool's index (the serialisation point).
    let plan: AllocationPlan | undefined;
    for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
      snap = store.snapshot(key);
      if (!snap) return this.forgetPool(key);
      plan = planAllocation(snap, verified, {
        random: this.options.random,
        maxClaimsPerPass: this.options.maxClaimsPerPass ?? 500,
      });
      if (plan.verifyAddresses.length > 0 && attempt === 1) {
        if (!(await this.verifyAddresses(snap, plan.verifyAddresses, verified))) return { kind: 'retry', reason: 'a live read failed' };
        continue;
      }
      if (!plan.indexesChanged) break;
      const committed = await store.commitPoolStatus(snap.pool, plan.indexes, this.options.clock.wallMs());
      if (committed.kind === 'ok') break;
      if (committed.kind === 'notFound') return this.forgetPool(key);
      this.options.metrics.conflicts.labels('pool').inc();
      await store.readPool(key);
      plan = undefined;
    }
    if (!plan || !snap) return { kind: 'retry', reason: 'the pool kept changing under this pass' };

    this.log.debug(
      { pool: key, bindings: plan.bindings.length, failures: plan.failures.length, indexesChanged: plan.indexesChanged, deferred: plan.deferred, absent: [...verified.absentClaims].join(',') },
      'pass planned',
    );
    // 3. Side effects of the committed plan.
    const pool = snap.pool;
    const nowMs = this.options.clock.wallMs();
    const bound = await mapConcurrent(plan.bindings, concurrency, (b) => this.bind(snap, b));
    for (const r of bound) if (!r.ok || r.value === 'retry') retry = true;
    for (const r of bound) if (!r.ok) this.log.warn({ pool: key, err: describeError(r.error) }, 'binding failed; will retry');

    const failed = await mapConcurrent(plan.failures, concurrency, async (f) => {
      countError(this.options.metrics, f.reason);
      if (f.claim.errorMessage === f.message) return;
      const r = await store.failClaim(f.claim, f.reason, f.message, nowMs);
      if (r.kind === 'conflict') {
        this.options.metrics.conflicts.labels('claim').inc();
        throw new Error('claim changed');
      }
      if (r.kind === 'ok') {
        await store.recordEvent({ kind: 'claim', claim: f.claim }, { type: 'Warning', reason: pascal(f.reason), action: 'Allocate', note: f.message });
      }
    });
    for (const r of failed) if (!r.ok) retry = true;

    const unbound = await mapConcurrent(plan.unbind, concurrency, async (claim) => {
      const r = await store.unbindClaim(claim);
      if (r.kind === 'ok') {
        await store.recordEvent(
          { kind: 'claim', claim },
          { type: 'Warning', reason: 'AddressLost', action: 'Allocate', note: `IPAddress ${claim.boundAddressName ?? ''} no longer exists; allocating a new address` },
        );
      }
      if (r.kind === 'conflict') throw new Error('claim changed');
    });
    for (const r of unbound) if (!r.ok) retry = true;

    const extra = await mapConcurrent(plan.duplicates, concurrency, async (a) => {
      await store.deleteAddress(a);
      this.log.info({ claim: a.claimName, pool: key, ip: a.address, reason: 'duplicate' }, 'deleted an extra address of a bound claim');
    });
    for (const r of extra) if (!r.ok) retry = true;

    let finalizer = plan.poolFinalizer;
    if (finalizer === 'remove' && (await store.countAddressesLive(pool)) > 0) {
      finalizer = undefined; // the cache is behind: an address still names this pool
      retry = true;
    }
    if (finalizer || plan.poolLabels) {
      const fresh = store.snapshot(key)?.pool ?? pool;
      const r = await store.updatePoolMeta(fresh, { finalizer, labels: plan.poolLabels });
      if (r.kind === 'conflict') retry = true;
      if (r.kind === 'ok' && finalizer === 'remove') this.log.info({ pool: key }, 'pool released: no addresses remain');
    }

    await this.report(key, pool, plan.problems);
    this.updateUsage(key, plan);
    if (retry) return { kind: 'retry', reason: 'some writes conflicted' };
    if (plan.deferred > 0) return { kind: 'requeueAfter', delayMs: 0 };
    return { kind: 'done' };
  }

  /** Finalizer on the claim, the address, then the claim's status. */
  private async bind(snap: PoolSnapshot, b: Binding): Promise<BindResult> {
    const { store, metrics } = this.options;
    let claim: ClaimState | undefined = b.claim;
    if (!claim.hasOurFinalizer) {
      let r = await store.setClaimFinalizer(claim, 'add', b.labels);
      if (r.kind === 'conflict') {
        metrics.conflicts.labels('claim').inc();
        claim = await store.readClaim(claim.namespace, claim.kind, claim.name);
        if (!claim || claim.deleting || (claim.boundAddressName && claim.boundAddressName !== b.address.name)) return 'skipped';
        r = claim.hasOurFinalizer ? { kind: 'ok', value: claim } : await store.setClaimFinalizer(claim, 'add', b.labels);
      }
      if (r.kind !== 'ok') return r.kind === 'notFound' ? 'skipped' : 'retry';
      claim = r.value;
    }
    if (!b.exists) {
      let created;
      try {
        created = await store.createAddress(snap.pool, claim, b.address);
      } catch (err) {
        if (retryPolicyFor(err) === 'retry') throw err;
        // Refused for good (validation, a webhook, RBAC): tell the claim, as upstream does, and move on.
        countError(metrics, 'createFailed');
        const r = await store.failClaim(claim, 'createFailed', CREATE_FAILED, this.options.clock.wallMs());
        if (r.kind === 'ok') {
          await store.recordEvent({ kind: 'claim', claim }, { type: 'Warning', reason: 'CreateFailed', action: 'Allocate', note: `${CREATE_FAILED}: ${describeError(err)}` });
        }
        return 'skipped';
      }
      if (created.kind === 'exists') {
        const mine = created.address.claimName === claim.name && created.address.claimKind === claim.kind;
        if (!mine) {
          metrics.conflicts.labels('address').inc();
          this.log.info({ claim: claim.name, ip: b.address.address, reason: 'addressTaken' }, 'address taken by another claim; re-planning');
          return 'retry';
        }
      } else {
        metrics.allocations.labels(claim.kind).inc();
      }
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await store.bindClaim(claim, b.address.name, this.options.clock.wallMs());
      if (r.kind === 'ok') {
        if (!b.exists) this.log.debug({ claim: claim.name, ip: b.address.address }, 'allocated');
        return 'bound';
      }
      if (r.kind === 'notFound') return 'skipped'; // the claim is gone; its address becomes an orphan and is released
      metrics.conflicts.labels('claim').inc();
      claim = await store.readClaim(claim.namespace, claim.kind, claim.name);
      if (!claim || claim.deleting) return 'skipped'; // its address is released by the next pass
      if (claim.boundAddressName === b.address.name && !claim.errorMessage) return 'bound';
      if (claim.boundAddressName && claim.boundAddressName !== b.address.name) {
        // Another controller bound this claim to a different address first: ours is a duplicate.
        const ours = snap.addresses.find((a) => a.name === b.address.name) ?? (await store.readAddress(claim.namespace, claim.kind, b.address.name));
        if (ours && ours.claimName === claim.name) await store.deleteAddress(ours);
        return 'skipped';
      }
    }
    return 'retry';
  }

  /**
   * The hosts of CAPM3 claims not served yet and not labelled (ADR 0019), by
   * live reads along their chain. False when a read failed.
   */
  private async resolveHosts(snap: PoolSnapshot, verified: MutableVerified): Promise<boolean> {
    const pending = snap.claims.filter((c) => c.dataOwner && !c.hasOurFinalizer && !c.deleting && !c.labels[BMH_LABEL] && !c.labels[NETDATA_HOST_LABEL]);
    const results = await mapConcurrent(pending, this.options.writeConcurrency ?? 32, async (c) => {
      const chain = await this.options.store.readCapm3Chain(c.namespace, c.dataOwner!.name);
      // another Metal3Data of that name (deleted and made again) is not this claim's
      const data = chain.data && c.dataOwner!.uid && chain.data.metadata.uid !== c.dataOwner!.uid ? undefined : chain.data;
      const r = capm3HostOf(c.namespace, { ...chain, data });
      if (r.kind === 'host') verified.claimHosts.set(c.name, r.host);
      else this.log.debug({ claim: c.name, reason: r.reason }, `no host for a CAPM3 claim: ${r.message}`);
    });
    return results.every((r) => r.ok);
  }

  /**
   * Reads claims live. A claim that is gone, or now names another pool, is absent
   * for this pool; a present one records its uid. False when a read failed: the
   * pass must not decide on incomplete knowledge.
   */
  private async verifyClaims(pool: PoolSnapshot['pool'], refs: readonly { kind: ClaimKind; name: string }[], verified: MutableVerified): Promise<boolean> {
    const results = await mapConcurrent(refs, this.options.writeConcurrency ?? 32, async ({ kind, name }) => {
      const live = await this.options.store.readClaim(pool.namespace, kind, name);
      const key = kindKey(kind, name);
      if (!live || live.poolName !== pool.name) verified.absentClaims.add(key);
      else verified.liveClaimUids.set(key, live.uid);
    });
    return results.every((r) => r.ok);
  }

  /** Reads addresses live; one that is gone or serves another claim is absent for the claim bound to it. */
  private async verifyAddresses(snap: PoolSnapshot, refs: readonly { kind: ClaimKind; name: string }[], verified: MutableVerified): Promise<boolean> {
    const boundBy = new Map(snap.claims.map((c) => [kindKey(c.kind, c.boundAddressName ?? ''), c]));
    const results = await mapConcurrent(refs, this.options.writeConcurrency ?? 32, async ({ kind, name }) => {
      const live = await this.options.store.readAddress(snap.pool.namespace, kind, name);
      const claim = boundBy.get(kindKey(kind, name));
      const theirs = live && claim && (live.claimName !== claim.name || (live.claimUid !== undefined && live.claimUid !== claim.uid));
      if (!live || theirs) verified.absentAddresses.add(kindKey(kind, name));
    });
    return results.every((r) => r.ok);
  }

  /** Events for a pool's problems, once per change of the set (not every pass). */
  private async report(key: PoolKey, pool: PoolSnapshot['pool'], problems: readonly PoolProblem[]): Promise<void> {
    const fingerprint = problems.map((p) => `${p.severity}:${p.message}`).join('\n');
    const blocking = problems.filter((p) => p.severity === 'blocking').length;
    this.options.metrics.poolProblems.labels(key, 'blocking').set(blocking);
    this.options.metrics.poolProblems.labels(key, 'warning').set(problems.length - blocking);
    if (this.reported.get(key) === fingerprint) return;
    const before = this.reported.get(key);
    this.reported.set(key, fingerprint);
    for (const p of problems) {
      this.log.warn({ pool: key, field: p.field, reason: p.reason }, p.message);
      await this.options.store.recordEvent(
        { kind: 'IPPool', pool },
        { type: 'Warning', reason: p.severity === 'blocking' ? 'InvalidPool' : pascal(p.reason), action: 'Validate', note: p.message },
      );
    }
    if (problems.length === 0 && before) {
      await this.options.store.recordEvent({ kind: 'IPPool', pool }, { type: 'Normal', reason: 'PoolValid', action: 'Validate', note: 'the problems reported earlier are fixed' });
    }
  }

  private updateUsage(key: PoolKey, plan: AllocationPlan): void {
    const g = this.options.metrics.poolAddresses;
    g.labels(key, 'used').set(plan.usage.used);
    g.labels(key, 'reserved').set(plan.usage.reserved);
    g.labels(key, 'free').set(plan.usage.free);
  }

  private forgetPool(key: PoolKey): WorkOutcome {
    this.reported.delete(key);
    for (const state of ['used', 'reserved', 'free']) this.options.metrics.poolAddresses.remove(key, state);
    for (const severity of ['blocking', 'warning']) this.options.metrics.poolProblems.remove(key, severity);
    return { kind: 'done' };
  }
}

function pascal(reason: string): string {
  return reason.charAt(0).toUpperCase() + reason.slice(1);
}
