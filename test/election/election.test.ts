import { expect } from 'chai';
import fc from 'fast-check';
import { ConfigError } from '../../src/core/errors.js';
import {
  FENCE_MARGIN_MS,
  LIFETIME_SLACK_MS,
  MIN_LEASE_DURATION_MS,
  sameRecord,
  step,
  validateTimings,
  vipInstallDeadlineMs,
  vipLifetimeSeconds,
  type Decision,
  type ElectionTimings,
  type ElectorState,
  type LeaseRecord,
  type ObservedLease,
} from '../../src/election/election.js';
import type { LeaseWrite, StoredLease } from '../../src/election/ports.js';
import { catchError } from '../core/catch-error.js';

// ---- builders -------------------------------------------------------------

const ME = 'node-a';
const OTHER = 'node-b';
const CLIENT_GO: ElectionTimings = { leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 };
const FAST: ElectionTimings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
/**
 * The step function's cases use small round numbers: they keep the fence margin but sit below the minimum lease,
 * which budgets the kernel's lifetime lateness (validateTimings and vipLifetimeSeconds, tested below): step never reads it.
 */
const STEP: ElectionTimings = { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 300 };
/** Wall time of "now" in every step below; deliberately unrelated to the monotonic times. */
const WALL = Date.UTC(2026, 10, 29, 12, 0, 0);
const DAY_MS = 86_400_000;

function rec(o: Partial<LeaseRecord> = {}): LeaseRecord {
  return { holderIdentity: OTHER, leaseDurationSeconds: 2, acquireTimeMs: WALL - 60_000, renewTimeMs: WALL - 1000, leaseTransitions: 3, ...o };
}

function seen(record: LeaseRecord | undefined, observedAtMs = 1000, resourceVersion = '7'): ObservedLease {
  return { record, resourceVersion: record ? resourceVersion : '', observedAtMs };
}

function state(o: Partial<ElectorState> = {}): ElectorState {
  return { lease: undefined, leading: false, lastRenewSentMs: undefined, candidate: true, stopping: false, ...o };
}

function decide(s: ElectorState, nowMs: number, timings: ElectionTimings = STEP): Decision {
  return step({ state: s, identity: ME, timings, nowMs, wallMs: WALL });
}

const FOREVER = Number.POSITIVE_INFINITY;
const mine = (o: Partial<LeaseRecord> = {}): LeaseRecord => rec({ holderIdentity: ME, ...o });

interface Case {
  readonly name: string;
  readonly state: ElectorState;
  readonly nowMs: number;
  readonly timings?: ElectionTimings;
  readonly want: Decision;
}

function table(cases: readonly Case[]): void {
  for (const c of cases) {
    it(c.name, () => {
      expect(decide(c.state, c.nowMs, c.timings)).to.deep.equal(c.want);
    });
  }
}

// ---- step -----------------------------------------------------------------

describe('election/election', () => {
  describe('step: a follower', () => {
    const acquired = (reason: 'released' | 'expired' | 'heldByMe', leaseTransitions: number, resourceVersion = '7'): Decision => ({
      kind: 'acquire',
      reason,
      resourceVersion,
      record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions },
    });

    table([
      { name: 'reads the Lease while it has never seen it', state: state(), nowMs: 0, want: { kind: 'read' } },
      {
        name: 'creates the Lease when it is absent, with itself as holder and 0 transitions',
        state: state({ lease: seen(undefined) }),
        nowMs: 5,
        want: { kind: 'create', record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: 0 } },
      },
      {
        name: 'writes leaseDurationSeconds rounded up to whole seconds',
        state: state({ lease: seen(undefined) }),
        nowMs: 5,
        timings: { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 300 },
        want: { kind: 'create', record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: 0 } },
      },
      {
        name: 'waits heldByOther until observedAt + leaseDuration, right after observing',
        state: state({ lease: seen(rec(), 1000) }),
        nowMs: 1000,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'still waits 1 ms before that instant',
        state: state({ lease: seen(rec(), 1000) }),
        nowMs: 2999,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'acquires as expired at exactly observedAt + leaseDuration, bumping leaseTransitions',
        state: state({ lease: seen(rec(), 1000) }),
        nowMs: 3000,
        want: acquired('expired', 4),
      },
      {
        name: 'acquires as expired any time after that instant',
        state: state({ lease: seen(rec(), 1000) }),
        nowMs: 90_000,
        want: acquired('expired', 4),
      },
      {
        name: "honours a holder's longer leaseDurationSeconds (waits 5 s, not its own 2 s)",
        state: state({ lease: seen(rec({ leaseDurationSeconds: 5 }), 1000) }),
        nowMs: 5999,
        want: { kind: 'wait', untilMs: 6000, reason: 'heldByOther' },
      },
      {
        name: "acquires at the end of a holder's longer lease",
        state: state({ lease: seen(rec({ leaseDurationSeconds: 5 }), 1000) }),
        nowMs: 6000,
        want: acquired('expired', 4),
      },
      {
        name: "keeps its own leaseDuration when the holder's is shorter",
        state: state({ lease: seen(rec({ leaseDurationSeconds: 1 }), 1000) }),
        nowMs: 2000,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'keeps its own leaseDuration when the record has none',
        state: state({ lease: seen(rec({ leaseDurationSeconds: undefined }), 1000) }),
        nowMs: 2000,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'ignores a renewTime a day in the past: still held until observedAt + leaseDuration',
        state: state({ lease: seen(rec({ renewTimeMs: WALL - DAY_MS, acquireTimeMs: WALL - 2 * DAY_MS }), 1000) }),
        nowMs: 1500,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'ignores a renewTime a day in the future: expired at observedAt + leaseDuration all the same',
        state: state({ lease: seen(rec({ renewTimeMs: WALL + DAY_MS }), 1000) }),
        nowMs: 3000,
        want: acquired('expired', 4),
      },
      {
        name: 'ignores a missing renewTime',
        state: state({ lease: seen(rec({ renewTimeMs: undefined, acquireTimeMs: undefined }), 1000) }),
        nowMs: 2999,
        want: { kind: 'wait', untilMs: 3000, reason: 'heldByOther' },
      },
      {
        name: 'acquires at once when the Lease is released (no holder), the instant it sees it',
        state: state({ lease: seen(rec({ holderIdentity: undefined, leaseDurationSeconds: 1 }), 1000, '9') }),
        nowMs: 1000,
        want: acquired('released', 4, '9'),
      },
      {
        name: 'treats an empty holderIdentity as released',
        state: state({ lease: seen(rec({ holderIdentity: '' }), 1000) }),
        nowMs: 1000,
        want: acquired('released', 4),
      },
      {
        name: 'after a restart, takes back a Lease naming itself at once without bumping transitions',
        state: state({ lease: seen(mine(), 1000) }),
        nowMs: 1000,
        want: acquired('heldByMe', 3),
      },
      {
        name: 'waits notCandidate (forever) when not ready, even when the Lease is free',
        state: state({ candidate: false, lease: seen(rec({ holderIdentity: undefined }), 1000) }),
        nowMs: 99_000,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'notCandidate' },
      },
      {
        name: 'waits notCandidate without even reading the Lease',
        state: state({ candidate: false }),
        nowMs: 0,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'notCandidate' },
      },
      {
        name: 'waits notCandidate when an expired Lease is held by another',
        state: state({ candidate: false, lease: seen(rec(), 1000) }),
        nowMs: 99_000,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'notCandidate' },
      },
      {
        name: 'stops (waits stopped forever) when stopping, whatever the Lease says',
        state: state({ stopping: true, lease: seen(rec({ holderIdentity: undefined }), 1000) }),
        nowMs: 5000,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'stopped' },
      },
      {
        name: 'stops when stopping before it has read the Lease',
        state: state({ stopping: true }),
        nowMs: 0,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'stopped' },
      },
      {
        name: "does not release another agent's Lease on the way out",
        state: state({ stopping: true, lease: seen(rec(), 1000) }),
        nowMs: 5000,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'stopped' },
      },
    ]);
  });

  describe('step: a candidate that is not preferred (ADR 0022: an Ironic pod running, not Ready)', () => {
    const free = rec({ holderIdentity: undefined, leaseDurationSeconds: 1 });
    const take = (reason: 'released' | 'expired', transitions: number): Decision => ({
      kind: 'acquire',
      reason,
      resourceVersion: '7',
      record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: transitions },
    });
    table([
      { name: 'defers a released Lease for a retryPeriod after it was seen free', state: state({ preferred: false, lease: seen(free, 1000) }), nowMs: 1100, want: { kind: 'wait', untilMs: 1300, reason: 'deferring' } },
      { name: 'then takes it', state: state({ preferred: false, lease: seen(free, 1000) }), nowMs: 1300, want: take('released', 4) },
      { name: 'a preferred candidate takes it at once', state: state({ preferred: true, lease: seen(free, 1000) }), nowMs: 1100, want: take('released', 4) },
      { name: 'defers an expired Lease for a retryPeriod past its expiry', state: state({ preferred: false, lease: seen(rec(), 1000) }), nowMs: 3100, want: { kind: 'wait', untilMs: 3300, reason: 'deferring' } },
      { name: 'then takes it', state: state({ preferred: false, lease: seen(rec(), 1000) }), nowMs: 3300, want: take('expired', 4) },
      { name: 'defers creating a missing Lease', state: state({ preferred: false, lease: seen(undefined, 1000) }), nowMs: 1000, want: { kind: 'wait', untilMs: 1300, reason: 'deferring' } },
      {
        name: 'takes its own record back at once (heldByMe: nobody else may hold it)',
        state: state({ preferred: false, lease: seen(mine(), 1000) }),
        nowMs: 1000,
        want: { kind: 'acquire', reason: 'heldByMe', resourceVersion: '7', record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: 3 } },
      },
      {
        name: 'a leader that is not preferred renews (Ready is a preference: it does not step down for it)',
        state: state({ preferred: false, leading: true, lastRenewSentMs: 1000, lease: seen(mine(), 1000) }),
        nowMs: 1300,
        want: { kind: 'renew', resourceVersion: '7', record: { ...mine(), leaseDurationSeconds: 2, renewTimeMs: WALL } },
      },
    ]);
  });

  describe('step: a leader', () => {
    const leader = (o: Partial<ElectorState> = {}): ElectorState =>
      state({ leading: true, lastRenewSentMs: 1000, lease: seen(mine({ acquireTimeMs: WALL - 5000, renewTimeMs: WALL - 300 }), 1000, '12'), ...o });

    table([
      { name: 'waits until lastRenewSent + retryPeriod', state: leader(), nowMs: 1000, want: { kind: 'wait', untilMs: 1300, reason: 'leading' } },
      { name: 'still waits 1 ms before the renew time', state: leader(), nowMs: 1299, want: { kind: 'wait', untilMs: 1300, reason: 'leading' } },
      {
        name: 'renews at lastRenewSent + retryPeriod: same holder, acquireTime and transitions; renewTime = wall now',
        state: leader(),
        nowMs: 1300,
        want: {
          kind: 'renew',
          resourceVersion: '12',
          record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL - 5000, renewTimeMs: WALL, leaseTransitions: 3 },
        },
      },
      {
        name: 'renews (not fences) 1 ms before the deadline',
        state: leader(),
        nowMs: 2199,
        want: {
          kind: 'renew',
          resourceVersion: '12',
          record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL - 5000, renewTimeMs: WALL, leaseTransitions: 3 },
        },
      },
      {
        name: 'rewrites a leaseDurationSeconds that drifted from its own',
        state: leader({ lease: seen(mine({ leaseDurationSeconds: 1, acquireTimeMs: WALL - 5000 }), 1000, '12') }),
        nowMs: 1300,
        want: {
          kind: 'renew',
          resourceVersion: '12',
          record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL - 5000, renewTimeMs: WALL, leaseTransitions: 3 },
        },
      },
      {
        name: 'fences renewDeadlineExceeded exactly at lastRenewSent + renewDeadline',
        state: leader(),
        nowMs: 2200,
        want: { kind: 'fence', reason: 'renewDeadlineExceeded' },
      },
      { name: 'fences renewDeadlineExceeded after the deadline', state: leader(), nowMs: 9000, want: { kind: 'fence', reason: 'renewDeadlineExceeded' } },
      {
        name: 'fences renewDeadlineExceeded when it has no send time at all',
        state: leader({ lastRenewSentMs: undefined }),
        nowMs: 1000,
        want: { kind: 'fence', reason: 'renewDeadlineExceeded' },
      },
      {
        name: 'fences with the client-go timings at 10 s, not 15 s',
        state: leader(),
        nowMs: 11_000,
        timings: CLIENT_GO,
        want: { kind: 'fence', reason: 'renewDeadlineExceeded' },
      },
      { name: 'fences shutdown when stopping', state: leader({ stopping: true }), nowMs: 1000, want: { kind: 'fence', reason: 'shutdown' } },
      {
        name: 'fences shutdown (not renewDeadlineExceeded) when stopping after the deadline',
        state: leader({ stopping: true }),
        nowMs: 9000,
        want: { kind: 'fence', reason: 'shutdown' },
      },
      { name: 'fences notCandidate when no longer ready', state: leader({ candidate: false }), nowMs: 1000, want: { kind: 'fence', reason: 'notCandidate' } },
      {
        name: 'fences lostLease when the record names another holder',
        state: leader({ lease: seen(rec(), 1100, '13') }),
        nowMs: 1100,
        want: { kind: 'fence', reason: 'lostLease' },
      },
      {
        name: 'fences lostLease when the record was cleared',
        state: leader({ lease: seen(rec({ holderIdentity: undefined }), 1100, '13') }),
        nowMs: 1100,
        want: { kind: 'fence', reason: 'lostLease' },
      },
      {
        name: 'fences lostLease when the Lease was deleted',
        state: leader({ lease: seen(undefined, 1100) }),
        nowMs: 1100,
        want: { kind: 'fence', reason: 'lostLease' },
      },
    ]);
  });

  describe('step: after fencing', () => {
    const fenced = (o: Partial<ElectorState>): ElectorState => state({ leading: false, lastRenewSentMs: 1000, lease: seen(mine(), 1000, '12'), ...o });
    const released: Decision = {
      kind: 'release',
      resourceVersion: '12',
      record: { holderIdentity: undefined, leaseDurationSeconds: 1, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: 3 },
    };

    table([
      { name: 'releases a record still naming it when stopping: holder cleared, leaseDurationSeconds 1', state: fenced({ stopping: true }), nowMs: 1100, want: released },
      { name: 'releases a record still naming it when no longer a candidate', state: fenced({ candidate: false }), nowMs: 1100, want: released },
      {
        name: 'does not release a record that names someone else: stops',
        state: fenced({ stopping: true, lease: seen(rec(), 1000, '12') }),
        nowMs: 1100,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'stopped' },
      },
      {
        name: 'after releasing, waits notCandidate',
        state: fenced({ candidate: false, lease: seen(rec({ holderIdentity: undefined, leaseDurationSeconds: 1 }), 1100, '13') }),
        nowMs: 1100,
        want: { kind: 'wait', untilMs: FOREVER, reason: 'notCandidate' },
      },
      {
        name: 'a candidate that fenced on its deadline takes its own record back (heldByMe) with a fresh write',
        state: fenced({}),
        nowMs: 2200,
        want: {
          kind: 'acquire',
          reason: 'heldByMe',
          resourceVersion: '12',
          record: { holderIdentity: ME, leaseDurationSeconds: 2, acquireTimeMs: WALL, renewTimeMs: WALL, leaseTransitions: 3 },
        },
      },
    ]);
  });

  describe('sameRecord', () => {
    const base = rec();
    it('is true for equal values in different objects, and for two absent records', () => {
      expect(sameRecord(base, { ...base })).to.equal(true);
      expect(sameRecord(undefined, undefined)).to.equal(true);
    });
    it('is false when either is absent', () => {
      expect(sameRecord(base, undefined)).to.equal(false);
      expect(sameRecord(undefined, base)).to.equal(false);
    });
    const changes: Partial<LeaseRecord>[] = [
      { holderIdentity: ME },
      { holderIdentity: undefined },
      { leaseDurationSeconds: 3 },
      { acquireTimeMs: WALL },
      { renewTimeMs: WALL },
      { renewTimeMs: undefined },
      { leaseTransitions: 4 },
    ];
    for (const change of changes) {
      it(`is false when only ${JSON.stringify(change)} differs`, () => {
        expect(sameRecord(base, { ...base, ...change })).to.equal(false);
      });
    }
  });

  // ---- validateTimings ------------------------------------------------------

  describe('validateTimings', () => {
    it('accepts client-go defaults (15 s / 10 s / 2 s) and returns them', () => {
      expect(validateTimings(CLIENT_GO)).to.equal(CLIENT_GO);
    });
    it('accepts fast timings (3 s / 2 s / 300 ms)', () => {
      expect(validateTimings(FAST)).to.equal(FAST);
    });
    it('accepts each rule at its boundary', () => {
      expect(() => validateTimings({ leaseDurationMs: MIN_LEASE_DURATION_MS, renewDeadlineMs: 60, retryPeriodMs: 50 })).not.to.throw();
      expect(() => validateTimings({ leaseDurationMs: 2400, renewDeadlineMs: 1900, retryPeriodMs: 1000 })).not.to.throw();
    });

    // The minimum exists because the kernel lifetime has 1 s steps; vipLifetimeSeconds keeps 1300 ms of
    // slack, so with a leaseDuration of 1000..2299 ms even an instant renew gets a 0 s lifetime ("too late")
    // and the VIP can never be installed. Accepted timings must leave room for at least 1 s.
    it('accepts no leaseDuration so short that even an instant renew gets a 0 s VIP lifetime', () => {
      const candidates = fc
        .record({ retryPeriodMs: fc.integer({ min: 50, max: 400 }), extraDeadlineMs: fc.integer({ min: 0, max: 400 }), leaseDurationMs: fc.integer({ min: 900, max: 4000 }) })
        .map(({ retryPeriodMs, extraDeadlineMs, leaseDurationMs }): ElectionTimings => ({ retryPeriodMs, renewDeadlineMs: Math.ceil(retryPeriodMs * 1.2) + extraDeadlineMs, leaseDurationMs }));
      fc.assert(
        fc.property(candidates, (timings) => {
          let accepted = true;
          try {
            validateTimings(timings);
          } catch {
            accepted = false;
          }
          if (accepted) expect(vipLifetimeSeconds(timings, 0, 0), `lifetime for an instant renew with ${JSON.stringify(timings)}`).to.be.at.least(1);
        }),
        { examples: [[{ leaseDurationMs: 1000, renewDeadlineMs: 120, retryPeriodMs: 100 }]] },
      );
    });

    const rejected: { name: string; timings: ElectionTimings; setting: string; mentions: string }[] = [
      { name: 'retryPeriod below 50 ms', timings: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 49 }, setting: 'retryPeriodMs', mentions: '50' },
      { name: 'a retryPeriod that is not a number', timings: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: Number.NaN }, setting: 'retryPeriodMs', mentions: '50' },
      { name: 'renewDeadline below 1.2 × retryPeriod', timings: { leaseDurationMs: 2000, renewDeadlineMs: 359, retryPeriodMs: 300 }, setting: 'renewDeadlineMs', mentions: '1.2' },
      { name: 'renewDeadline equal to retryPeriod', timings: { leaseDurationMs: 15000, renewDeadlineMs: 2000, retryPeriodMs: 2000 }, setting: 'renewDeadlineMs', mentions: '1.2' },
      {
        name: `leaseDuration less than renewDeadline + ${FENCE_MARGIN_MS} ms`,
        timings: { leaseDurationMs: 1699, renewDeadlineMs: 1200, retryPeriodMs: 300 },
        setting: 'leaseDurationMs',
        mentions: String(FENCE_MARGIN_MS),
      },
      { name: 'leaseDuration equal to renewDeadline', timings: { leaseDurationMs: 10000, renewDeadlineMs: 10000, retryPeriodMs: 2000 }, setting: 'leaseDurationMs', mentions: String(FENCE_MARGIN_MS) },
      { name: 'leaseDuration below 2.4 s (1 s kernel lifetime + 1.3 s slack + a round trip)', timings: { leaseDurationMs: 2399, renewDeadlineMs: 120, retryPeriodMs: 100 }, setting: 'leaseDurationMs', mentions: '2400' },
    ];
    for (const r of rejected) {
      it(`rejects ${r.name} with a ConfigError naming election.${r.setting}`, () => {
        const err = catchError(() => validateTimings(r.timings));
        expect(err).to.be.instanceOf(ConfigError);
        expect((err as ConfigError).setting).to.equal(`election.${r.setting}`);
        expect(err.message).to.include(`election.${r.setting}`).and.include(r.mentions);
      });
    }

    it('names the setting under the prefix it is given', () => {
      const err = catchError(() => validateTimings({ leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 10 }, 'vip.election'));
      expect((err as ConfigError).setting).to.equal('vip.election.retryPeriodMs');
    });
  });

  // ---- vipLifetimeSeconds -----------------------------------------------------

  describe('vipLifetimeSeconds', () => {
    const examples: [string, ElectionTimings, number, number, number | undefined, number][] = [
      ['fast, instant reply', FAST, 0, 0, undefined, 1],
      ['fast, 700 ms round trip (2700 ms used of 3000)', FAST, 0, 700, undefined, 1],
      ['fast, 701 ms round trip: too late to refresh', FAST, 0, 701, undefined, 0],
      ['fast, no slack', FAST, 0, 0, 0, 3],
      ['client-go, 100 ms round trip', CLIENT_GO, 10_000, 10_100, undefined, 13],
      ['client-go, 1100 ms round trip', CLIENT_GO, 10_000, 11_100, undefined, 12],
      ['client-go, answered after the lease would have expired', CLIENT_GO, 10_000, 30_000, undefined, 0],
    ];
    for (const [name, timings, sentMs, nowMs, slackMs, want] of examples) {
      it(`${name} → ${want} s`, () => {
        expect(vipLifetimeSeconds(timings, sentMs, nowMs, slackMs)).to.equal(want);
      });
    }

    const validTimings = fc
      .record({ retryPeriodMs: fc.integer({ min: 50, max: 20_000 }), extraDeadlineMs: fc.integer({ min: 0, max: 30_000 }), extraLeaseMs: fc.integer({ min: 0, max: 30_000 }) })
      .map(({ retryPeriodMs, extraDeadlineMs, extraLeaseMs }): ElectionTimings => {
        const renewDeadlineMs = Math.ceil(retryPeriodMs * 1.2) + extraDeadlineMs;
        return { retryPeriodMs, renewDeadlineMs, leaseDurationMs: Math.max(MIN_LEASE_DURATION_MS, renewDeadlineMs + FENCE_MARGIN_MS + extraLeaseMs) };
      });

    it('ends the installed lifetime (plus the kernel slack) no later than leaseDuration after the send, never negative, and is the longest such whole second', () => {
      fc.assert(
        fc.property(
          validTimings,
          fc.integer({ min: 0, max: 2 ** 40 }),
          fc.integer({ min: 0, max: 120_000 }),
          fc.option(fc.integer({ min: 0, max: 2000 }), { nil: undefined }),
          (timings, sentMs, roundTripMs, slackMs) => {
            expect(() => validateTimings(timings)).not.to.throw();
            const nowMs = sentMs + roundTripMs;
            const seconds = vipLifetimeSeconds(timings, sentMs, nowMs, slackMs);
            const slack = slackMs ?? LIFETIME_SLACK_MS;
            expect(Number.isInteger(seconds)).to.equal(true);
            expect(seconds).to.be.at.least(0);
            if (seconds > 0) {
              // The kernel removes the VIP at nowMs + seconds*1000 (+ up to slack late): before any follower may take over.
              expect(seconds * 1000 + slack + (nowMs - sentMs)).to.be.at.most(timings.leaseDurationMs);
            }
            // ...and no whole second more would still fit.
            expect((seconds + 1) * 1000 + slack + (nowMs - sentMs)).to.be.greaterThan(timings.leaseDurationMs);
          },
        ),
      );
    });
  });

  // ---- vipInstallDeadlineMs ---------------------------------------------------

  describe('vipInstallDeadlineMs', () => {
    it('a lifetime the kernel starts by the deadline ends (however late the kernel removes it) before any follower may take over, and never after the renew deadline', () => {
      const timings = fc
        .record({ retryPeriodMs: fc.integer({ min: 50, max: 20_000 }), extraDeadlineMs: fc.integer({ min: 0, max: 30_000 }), extraLeaseMs: fc.integer({ min: 0, max: 30_000 }) })
        .map(({ retryPeriodMs, extraDeadlineMs, extraLeaseMs }): ElectionTimings => {
          const renewDeadlineMs = Math.ceil(retryPeriodMs * 1.2) + extraDeadlineMs;
          return validateTimings({ retryPeriodMs, renewDeadlineMs, leaseDurationMs: Math.max(MIN_LEASE_DURATION_MS, renewDeadlineMs + FENCE_MARGIN_MS + extraLeaseMs) });
        });
      fc.assert(
        fc.property(timings, fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 0, max: 60_000 }), fc.integer({ min: 0, max: 60_000 }), (t, sentMs, roundTripMs, sendDelayMs) => {
          const seconds = vipLifetimeSeconds(t, sentMs, sentMs + roundTripMs);
          fc.pre(seconds > 0);
          const deadline = vipInstallDeadlineMs(t, sentMs, seconds);
          // computed at once, the send is in time (unless the renew deadline passed, when nothing may be installed)
          if (roundTripMs <= t.renewDeadlineMs) expect(deadline).to.be.at.least(sentMs + roundTripMs);
          const kernelStartsAt = sentMs + roundTripMs + sendDelayMs;
          if (kernelStartsAt > deadline) return; // refused before the send, or withdrawn after it
          expect(kernelStartsAt + seconds * 1000 + LIFETIME_SLACK_MS).to.be.at.most(sentMs + t.leaseDurationMs);
          expect(kernelStartsAt).to.be.at.most(sentMs + t.renewDeadlineMs);
        }),
      );
    });
  });

  // ---- the safety model -------------------------------------------------------

  describe('model: at most one agent holds the VIP', () => {
    it('holds under random interleavings of time, slow/failed/lost writes, delayed watch events, readiness, freezes and shutdowns', () => {
      let runs = 0;
      let handovers = 0;
      fc.assert(
        fc.property(scenarioArb, (scenario) => {
          const result = runModel(scenario, MODEL_AS_BUILT);
          runs += 1;
          if (result.holders > 1) handovers += 1;
          if (result.overlap) throw new Error(`two agents held the VIP at once: ${result.overlap}`);
        }),
        { numRuns: 300 },
      );
      // The model is only worth something if leadership actually changes hands in it.
      expect(handovers, `${handovers} of ${runs} runs had a handover`).to.be.greaterThan(runs / 10);
    });

    describe('has teeth: scripted runs that the model passes as built and fails when a defence is removed', () => {
      // The fence at renewDeadline and the kernel lifetime are two defences; each alone keeps a live leader
      // safe, so a mutation must remove both to show without a freeze, or one with a frozen leader.
      const serveNow = (agent: number): Action => ({ kind: 'serve', agent, outcome: 'apply', answer: 'now' });
      const takeoverAtMs = 300 + FAST.leaseDurationMs;
      /** agent-0 creates the Lease at 0 and renews at 300 (answered at `answeredAtMs`); agent-1 watches; agent-1 takes over at 3300. */
      const slowRenewThenTakeover = (answeredAtMs: number, after: readonly Action[]): Scenario => ({
        timings: [FAST, FAST],
        monoOffsetsMs: [0, 0],
        wallOffsetsMs: [WALL, WALL - DAY_MS],
        actions: [
          serveNow(0), // get: absent
          serveNow(0), // create: agent-0 leads, sent 0
          serveNow(1), // get: held by agent-0, observed at 0
          { kind: 'advance', ms: 300 }, // agent-0 sends its renew
          { kind: 'serve', agent: 0, outcome: 'apply', answer: 'later' },
          { kind: 'deliver', agent: 1 },
          { kind: 'deliver', agent: 1 }, // agent-1 sees the renew at 300: may take over at 3300
          { kind: 'advance', ms: answeredAtMs - 300 },
          { kind: 'respond', agent: 0 },
          ...after,
          { kind: 'advance', ms: takeoverAtMs - answeredAtMs },
          serveNow(1), // agent-1 acquires at 3300
          { kind: 'advance', ms: 100 },
        ],
      });
      const noFenceMargin = (t: ElectionTimings): ElectionTimings => ({ ...t, renewDeadlineMs: t.leaseDurationMs + 300 });
      const lifetimeIgnoringRoundTrip = (t: ElectionTimings): number => Math.floor(t.leaseDurationMs / 1000);

      it('a renew answered 1100 ms late: safe as built; unsafe with renewDeadline past leaseDuration and a lifetime ignoring the round trip', () => {
        const scenario = slowRenewThenTakeover(1400, []);
        const asBuilt = runModel(scenario, MODEL_AS_BUILT);
        expect(asBuilt.overlap).to.equal(undefined);
        expect(asBuilt.holders).to.equal(2);
        expect(runModel(scenario, { timings: noFenceMargin, lifetimeSeconds: lifetimeIgnoringRoundTrip }).overlap).to.be.a('string');
        // Either defence alone suffices:
        expect(runModel(scenario, { ...MODEL_AS_BUILT, timings: noFenceMargin }).overlap).to.equal(undefined);
        expect(runModel(scenario, { ...MODEL_AS_BUILT, lifetimeSeconds: lifetimeIgnoringRoundTrip }).overlap).to.equal(undefined);
      });

      it('a leader frozen after a prompt renew: safe as built; unsafe with the 400 ms of kernel slack budgeted before the 1.25 s worst case was measured', () => {
        const scenario = slowRenewThenTakeover(400, [{ kind: 'freeze', agent: 0, ms: 5000 }]);
        const asBuilt = runModel(scenario, MODEL_AS_BUILT);
        expect(asBuilt.overlap).to.equal(undefined);
        expect(asBuilt.holders).to.equal(2);
        // floor((3000 - 100 - 400) / 1000) = 2 s from 400, removed as late as 3650: after the takeover at 3300
        expect(runModel(scenario, { ...MODEL_AS_BUILT, lifetimeSeconds: (t, sentMs, nowMs) => vipLifetimeSeconds(t, sentMs, nowMs, 400) }).overlap).to.be.a('string');
      });

      it('a leader frozen after a renew answered 700 ms late: safe as built (a 1 s lifetime the kernel may end 1.25 s late: gone at 3250, taken at 3300); unsafe with a lifetime ignoring the round trip', () => {
        const scenario = slowRenewThenTakeover(1000, [{ kind: 'freeze', agent: 0, ms: 5000 }]);
        const asBuilt = runModel(scenario, MODEL_AS_BUILT);
        expect(asBuilt.overlap).to.equal(undefined);
        expect(asBuilt.holders).to.equal(2);
        expect(runModel(scenario, { ...MODEL_AS_BUILT, lifetimeSeconds: lifetimeIgnoringRoundTrip }).overlap).to.be.a('string');
      });
    });
  });
});

// ---- the model ----------------------------------------------------------------
//
// Pure state machines driven by `step`, one Lease "server" (record +
// resourceVersion, conditional writes, a change history that each agent's
// watch delivers in order but late), one global time. Each agent has its own
// monotonic clock (a random offset, same rate) and its own wall clock (wildly
// skewed: written into records, never trusted). An agent mirrors elector.ts:
// one request in flight at a time; the decision on a response; a fence timer
// at lastRenewSent + renewDeadline that fires even while a request is in
// flight (but not while the process is frozen); a VIP installed on a
// successful acquire/renew response with a kernel lifetime of
// vipLifetimeSeconds(...) that the kernel enforces even while frozen.

/**
 * How late the kernel removes an expired address, at worst: 1 s after another address change just before the
 * expiry, +250 ms rounding (LIFETIME_SLACK_MS adds 50 ms for its work queue).
 */
const KERNEL_LATE_MS = 1250;

type Action =
  | { readonly kind: 'advance'; readonly ms: number }
  /** The server applies a request `agent` gave up on (timed out at the client), late. */
  | { readonly kind: 'applyAbandoned'; readonly agent: number }
  /**
   * The server handles `agent`'s request (or the next agent's that has one waiting) now: applies it and
   * answers, answers with an error without applying it (it may still be applied later), or applies it and
   * the answer is lost. The answer reaches the agent at once, or waits for a `respond`.
   */
  | { readonly kind: 'serve'; readonly agent: number; readonly outcome: 'apply' | 'fail' | 'applyLost'; readonly answer: 'now' | 'later' }
  /** The answer to `agent`'s (or the next agent's) served request arrives. */
  | { readonly kind: 'respond'; readonly agent: number }
  | { readonly kind: 'deliver'; readonly agent: number }
  | { readonly kind: 'candidate'; readonly agent: number; readonly value: boolean; readonly preferred: boolean }
  | { readonly kind: 'freeze'; readonly agent: number; readonly ms: number }
  | { readonly kind: 'stop'; readonly agent: number }
  /** A stopped agent's process starts again, fresh (after a clean shutdown: it fenced before it stopped). */
  | { readonly kind: 'restart'; readonly agent: number };

interface Scenario {
  readonly timings: readonly ElectionTimings[];
  readonly monoOffsetsMs: readonly number[];
  readonly wallOffsetsMs: readonly number[];
  readonly actions: readonly Action[];
}

interface ModelVariant {
  readonly timings: (t: ElectionTimings) => ElectionTimings;
  readonly lifetimeSeconds: (t: ElectionTimings, sentMs: number, nowMs: number) => number;
}

const MODEL_AS_BUILT: ModelVariant = { timings: (t) => t, lifetimeSeconds: (t, sentMs, nowMs) => vipLifetimeSeconds(t, sentMs, nowMs) };

/** Valid timings with which a VIP can be installed (leaseDuration ≥ 2.4 s leaves a 1 s lifetime room for a round trip). */
const modelTimingsArb = fc
  .record({ retryPeriodMs: fc.integer({ min: 50, max: 800 }), extraDeadlineMs: fc.integer({ min: 0, max: 1500 }), extraLeaseMs: fc.integer({ min: 0, max: 1500 }) })
  .map(({ retryPeriodMs, extraDeadlineMs, extraLeaseMs }): ElectionTimings => {
    const renewDeadlineMs = Math.ceil(retryPeriodMs * 1.2) + extraDeadlineMs;
    return validateTimings({ retryPeriodMs, renewDeadlineMs, leaseDurationMs: Math.max(MIN_LEASE_DURATION_MS, renewDeadlineMs + FENCE_MARGIN_MS + extraLeaseMs) });
  });

function actionArb(agents: number): fc.Arbitrary<Action> {
  const agent = fc.nat(agents - 1);
  return fc.oneof(
    { weight: 20, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 60 }) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 60, max: 2500 }) }) },
    {
      weight: 40,
      arbitrary: fc.record({
        kind: fc.constant('serve' as const),
        agent,
        outcome: fc.constantFrom('apply' as const, 'apply' as const, 'apply' as const, 'fail' as const, 'applyLost' as const),
        answer: fc.constantFrom('now' as const, 'now' as const, 'later' as const),
      }),
    },
    { weight: 10, arbitrary: fc.record({ kind: fc.constant('respond' as const), agent }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('applyAbandoned' as const), agent }) },
    { weight: 20, arbitrary: fc.record({ kind: fc.constant('deliver' as const), agent }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('candidate' as const), agent, value: fc.boolean(), preferred: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('freeze' as const), agent, ms: fc.integer({ min: 1, max: 6000 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('stop' as const), agent }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('restart' as const), agent }) },
  );
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.integer({ min: 2, max: 3 }).chain((n) =>
  fc.record({
    timings: fc.oneof(
      modelTimingsArb.map((t) => Array.from({ length: n }, () => t)),
      fc.array(modelTimingsArb, { minLength: n, maxLength: n }),
    ),
    monoOffsetsMs: fc.array(fc.integer({ min: 0, max: 1e9 }), { minLength: n, maxLength: n }),
    wallOffsetsMs: fc.array(fc.integer({ min: -1e10, max: 1e10 }), { minLength: n, maxLength: n }),
    actions: fc.array(actionArb(n), { minLength: 100, maxLength: 400, size: 'max' }),
  }),
);

type Request =
  | { readonly op: 'get'; readonly sentMs: number }
  | { readonly op: 'create' | 'acquire' | 'renew' | 'release'; readonly sentMs: number; readonly record: LeaseRecord; readonly resourceVersion: string };

type Outcome = { readonly kind: 'read'; readonly lease: StoredLease | undefined } | { readonly kind: 'write'; readonly write: LeaseWrite } | { readonly kind: 'error' };

interface Agent {
  readonly id: string;
  readonly timings: ElectionTimings;
  readonly monoOffsetMs: number;
  readonly wallOffsetMs: number;
  state: ElectorState;
  pending: { readonly request: Request; outcome: Outcome | undefined } | undefined;
  /** Requests whose answers will never be read (the agent gave up on them), which the server may still apply. */
  readonly abandoned: Request[];
  idleUntilMs: number;
  frozenUntil: number | undefined;
  done: boolean;
  watchCursor: number;
  /** The VIP on this agent's node, in global time. */
  vip: { since: number; kernelExpiresAt: number } | undefined;
}

interface ModelResult {
  readonly overlap: string | undefined;
  /** Agents that held the VIP at some point. */
  readonly holders: number;
}

function runModel(scenario: Scenario, variant: ModelVariant): ModelResult {
  let t = 0;
  let lease: StoredLease | undefined;
  let version = 0;
  const history: (StoredLease | undefined)[] = [];
  const intervals: { agent: number; from: number; to: number }[] = [];

  const agents: Agent[] = scenario.timings.map((timings, i) => ({
    id: `agent-${i}`,
    timings: variant.timings(timings),
    monoOffsetMs: scenario.monoOffsetsMs[i]!,
    wallOffsetMs: scenario.wallOffsetsMs[i]!,
    state: { lease: undefined, leading: false, lastRenewSentMs: undefined, candidate: true, stopping: false },
    pending: undefined,
    abandoned: [],
    idleUntilMs: Number.NEGATIVE_INFINITY,
    frozenUntil: undefined,
    done: false,
    watchCursor: 0,
    vip: undefined,
  }));

  const mono = (a: Agent): number => t + a.monoOffsetMs;
  const toGlobal = (a: Agent, monoMs: number): number => monoMs - a.monoOffsetMs;
  const frozen = (a: Agent): boolean => a.frozenUntil !== undefined;

  // -- the server --
  const serve = (r: Request): Outcome => {
    if (r.op === 'get') return { kind: 'read', lease };
    const current = lease;
    const ok = r.op === 'create' ? current === undefined : current !== undefined && current.resourceVersion === r.resourceVersion;
    if (!ok) return { kind: 'write', write: { kind: 'conflict' } };
    version += 1;
    lease = { record: r.record, resourceVersion: String(version) };
    history.push(lease);
    return { kind: 'write', write: { kind: 'ok', lease } };
  };

  // -- the VIP on each node --
  const expireKernel = (i: number): void => {
    const a = agents[i]!;
    if (a.vip && a.vip.kernelExpiresAt <= t) {
      intervals.push({ agent: i, from: a.vip.since, to: a.vip.kernelExpiresAt });
      a.vip = undefined;
    }
  };
  const removeVip = (i: number): void => {
    expireKernel(i);
    const a = agents[i]!;
    if (a.vip) intervals.push({ agent: i, from: a.vip.since, to: t });
    a.vip = undefined;
  };
  const installVip = (i: number, sentMs: number): void => {
    expireKernel(i);
    const a = agents[i]!;
    const seconds = variant.lifetimeSeconds(a.timings, sentMs, mono(a));
    if (seconds <= 0) return; // too late to refresh: the previous lifetime runs out
    const kernelExpiresAt = t + seconds * 1000 + KERNEL_LATE_MS;
    if (a.vip) a.vip.kernelExpiresAt = kernelExpiresAt;
    else a.vip = { since: t, kernelExpiresAt };
  };

  // -- an agent, as elector.ts runs it --
  const observe = (a: Agent, seenLease: StoredLease | undefined): void => {
    const previous = a.state.lease;
    const changed = !previous || !sameRecord(previous.record, seenLease?.record);
    a.state = {
      ...a.state,
      lease: { record: seenLease?.record, resourceVersion: seenLease?.resourceVersion ?? '', observedAtMs: changed ? mono(a) : previous.observedAtMs },
    };
  };
  const fence = (i: number): void => {
    const a = agents[i]!;
    if (!a.state.leading) return;
    removeVip(i);
    a.state = { ...a.state, leading: false };
  };
  const send = (a: Agent, request: Request): void => {
    a.pending = { request, outcome: undefined };
  };
  const runSteps = (i: number): void => {
    const a = agents[i]!;
    for (let guard = 0; guard < 10; guard++) {
      if (a.done || frozen(a) || a.pending || mono(a) < a.idleUntilMs) return;
      const d = step({ state: a.state, identity: a.id, timings: a.timings, nowMs: mono(a), wallMs: t + a.wallOffsetMs });
      switch (d.kind) {
        case 'wait':
          if (d.reason === 'stopped') a.done = true;
          return;
        case 'fence':
          fence(i);
          continue;
        case 'read':
          send(a, { op: 'get', sentMs: mono(a) });
          return;
        case 'create':
          send(a, { op: 'create', sentMs: mono(a), record: d.record, resourceVersion: '' });
          return;
        case 'acquire':
        case 'renew':
        case 'release':
          send(a, { op: d.kind, sentMs: mono(a), record: d.record, resourceVersion: d.resourceVersion });
          return;
      }
    }
    throw new Error(`${a.id} did not settle`);
  };
  const respond = (i: number): void => {
    const a = agents[i]!;
    const p = a.pending;
    if (!p?.outcome || frozen(a)) return;
    a.pending = undefined;
    const { request: r, outcome } = p;
    const retryLater = (): void => {
      a.idleUntilMs = mono(a) + a.timings.retryPeriodMs;
      if (r.op === 'release' && a.state.stopping) a.done = true; // best effort on the way out
    };
    if (outcome.kind === 'error') return retryLater();
    if (outcome.kind === 'read') return observe(a, outcome.lease);
    const w = outcome.write;
    if (w.kind === 'conflict') return send(a, { op: 'get', sentMs: mono(a) });
    observe(a, w.lease);
    const inTime = mono(a) - r.sentMs < a.timings.renewDeadlineMs;
    if ((r.op === 'create' || r.op === 'acquire') && inTime) {
      a.state = { ...a.state, leading: true, lastRenewSentMs: r.sentMs };
      installVip(i, r.sentMs);
    } else if (r.op === 'renew' && a.state.leading && inTime) {
      a.state = { ...a.state, lastRenewSentMs: r.sentMs };
      installVip(i, r.sentMs);
    }
  };

  // -- time --
  const fenceDeadline = (a: Agent): number =>
    a.state.leading && !frozen(a) ? toGlobal(a, (a.state.lastRenewSentMs ?? Number.NEGATIVE_INFINITY) + a.timings.renewDeadlineMs) : Number.POSITIVE_INFINITY;
  const advance = (ms: number): void => {
    const target = t + ms;
    for (;;) {
      let next = Number.POSITIVE_INFINITY;
      for (const a of agents) next = Math.min(next, fenceDeadline(a), a.frozenUntil ?? Number.POSITIVE_INFINITY);
      if (next > target) break;
      t = Math.max(t, next);
      agents.forEach((a, i) => {
        if (a.frozenUntil !== undefined && a.frozenUntil <= t) a.frozenUntil = undefined;
        if (fenceDeadline(a) <= t) fence(i); // the fence timer
      });
    }
    t = target;
  };

  /** The agent named, or the next one round-robin for which `ready` holds (so few actions are wasted). */
  const pick = (start: number, ready: (a: Agent) => boolean): number | undefined => {
    for (let k = 0; k < agents.length; k++) {
      const i = (start + k) % agents.length;
      if (ready(agents[i]!)) return i;
    }
    return undefined;
  };

  agents.forEach((_, i) => runSteps(i));
  for (const action of scenario.actions) {
    switch (action.kind) {
      case 'advance':
        advance(action.ms);
        break;
      case 'serve': {
        const i = pick(action.agent, (a) => a.pending !== undefined && !a.pending.outcome);
        const p = i === undefined ? undefined : agents[i]!.pending;
        if (i === undefined || !p) break;
        if (action.outcome === 'fail') {
          p.outcome = { kind: 'error' };
          agents[i]!.abandoned.push(p.request); // timed out at the client; may still reach the server later
        } else {
          const outcome = serve(p.request);
          p.outcome = action.outcome === 'apply' ? outcome : { kind: 'error' };
        }
        if (action.answer === 'now') respond(i);
        break;
      }
      case 'applyAbandoned': {
        const late = agents[action.agent]!.abandoned.shift();
        if (late) serve(late);
        break;
      }
      case 'respond': {
        const i = pick(action.agent, (a) => a.pending?.outcome !== undefined && !frozen(a));
        if (i !== undefined) respond(i);
        break;
      }
      case 'deliver': {
        const a = agents[action.agent]!;
        if (!frozen(a) && !a.done && a.watchCursor < history.length) observe(a, history[a.watchCursor++]);
        break;
      }
      case 'candidate': {
        const a = agents[action.agent]!;
        if (!frozen(a)) a.state = { ...a.state, candidate: action.value, preferred: action.preferred };
        break;
      }
      case 'freeze': {
        const a = agents[action.agent]!;
        a.frozenUntil ??= t + action.ms;
        break;
      }
      case 'stop': {
        const a = agents[action.agent]!;
        if (!frozen(a)) a.state = { ...a.state, stopping: true };
        break;
      }
      case 'restart': {
        const a = agents[action.agent]!;
        if (!a.done) break;
        a.state = { lease: undefined, leading: false, lastRenewSentMs: undefined, candidate: true, stopping: false };
        a.done = false;
        a.idleUntilMs = Number.NEGATIVE_INFINITY;
        a.watchCursor = history.length;
        break;
      }
    }
    agents.forEach((_, i) => runSteps(i));
  }
  agents.forEach((_, i) => {
    expireKernel(i);
    const a = agents[i]!;
    if (a.vip) intervals.push({ agent: i, from: a.vip.since, to: Math.max(t, a.vip.since) + 1 });
  });

  let overlap: string | undefined;
  const held = intervals.filter((x) => x.to > x.from);
  for (const x of held) {
    for (const y of held) {
      if (x.agent < y.agent && x.from < y.to && y.from < x.to) {
        overlap ??= `agent-${x.agent} [${x.from}, ${x.to}) and agent-${y.agent} [${y.from}, ${y.to})`;
      }
    }
  }
  return { overlap, holders: new Set(held.map((x) => x.agent)).size };
}
