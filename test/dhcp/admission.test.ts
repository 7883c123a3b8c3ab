import { expect } from 'chai';
import { parseMac, type Mac } from '../../src/core/mac.js';
import { ADMISSION_DEFAULTS, admissionProblems, NewLeaseAdmission, refill, takeToken, type AdmissionPolicy } from '../../src/dhcp/admission.js';

const POLICY: AdmissionPolicy = { perMacPerSecond: 1, perMacBurst: 2, newLeasesPerSecond: 10, newLeasesBurst: 5, queueLength: 3, queueMaxWaitMs: 1000, trackedMacs: 100 };

function admission(over: Partial<AdmissionPolicy> = {}): NewLeaseAdmission<string> {
  return new NewLeaseAdmission<string>({ ...POLICY, ...over });
}

const mac = (i: number): Mac => parseMac(`02:00:00:${((i >> 16) & 0xff).toString(16).padStart(2, '0')}:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`);

describe('dhcp/admission', () => {
  describe('takeToken', () => {
    it('starts full, takes one per call, refuses when empty', () => {
      let b = takeToken(undefined, 0, 1, 2);
      expect(b).to.deep.equal({ ok: true, bucket: { tokens: 1, atMs: 0 } });
      b = takeToken(b.bucket, 0, 1, 2);
      expect(b.ok).to.equal(true);
      b = takeToken(b.bucket, 0, 1, 2);
      expect(b.ok).to.equal(false);
    });

    it('refills at the rate, capped at the burst', () => {
      expect(refill({ tokens: 0, atMs: 0 }, 500, 2, 5).tokens).to.equal(1);
      expect(refill({ tokens: 0, atMs: 0 }, 60_000, 2, 5).tokens).to.equal(5);
    });

    it('refills nothing when the clock goes backwards', () => {
      expect(refill({ tokens: 0.5, atMs: 1000 }, 0, 1000, 5)).to.deep.equal({ tokens: 0.5, atMs: 1000 });
    });
  });

  describe('NewLeaseAdmission', () => {
    it('always admits known hosts, whatever the buckets and queue hold', () => {
      const a = admission({ newLeasesBurst: 2, perMacBurst: 1, perMacPerSecond: 1, newLeasesPerSecond: 1, queueLength: 1 });
      for (let i = 0; i < 10; i++) a.admit(mac(i), 'unknown', `u${i}`, 0);
      expect(a.queued).to.equal(1);
      for (let i = 0; i < 50; i++) expect(a.admit(mac(999), 'known', 'k', 0)).to.deep.equal({ kind: 'admit', reason: 'knownHost' });
    });

    it('limits one unknown MAC to its burst, then its rate', () => {
      const a = admission();
      expect(a.admit(mac(1), 'unknown', 'a', 0).kind).to.equal('admit');
      expect(a.admit(mac(1), 'unknown', 'b', 0).kind).to.equal('admit');
      expect(a.admit(mac(1), 'unknown', 'c', 0)).to.deep.equal({ kind: 'drop', reason: 'macRateLimited' });
      expect(a.admit(mac(1), 'unknown', 'd', 999).kind).to.equal('drop');
      expect(a.admit(mac(1), 'unknown', 'e', 1000).kind).to.equal('admit');
      // another MAC has its own bucket
      expect(a.admit(mac(2), 'unknown', 'f', 1000).kind).to.equal('admit');
    });

    it('bounds all unknown MACs together: the burst, then a bounded queue, then drops', () => {
      const a = admission();
      const verdicts = Array.from({ length: 10 }, (_, i) => a.admit(mac(i), 'unknown', `r${i}`, 0));
      expect(verdicts.map((v) => (v.kind === 'drop' ? v.reason : v.kind))).to.deep.equal(['admit', 'admit', 'admit', 'admit', 'admit', 'queue', 'queue', 'queue', 'queueFull', 'queueFull']);
      expect(a.queued).to.equal(3);
    });

    it('admits the queue oldest first as tokens refill (10/s: one per 100 ms), never letting a newcomer overtake it', () => {
      const a = admission();
      for (let i = 0; i < 8; i++) a.admit(mac(i), 'unknown', `r${i}`, 0);
      expect(a.drain(0)).to.deep.equal({ admitted: [], expired: [] });
      expect(a.nextDrainInMs(0)).to.equal(100);
      // a token is back at 100 ms, but r5 waits: the newcomer queues behind it
      expect(a.admit(mac(50), 'unknown', 'late', 100)).to.deep.equal({ kind: 'drop', reason: 'queueFull' });
      expect(a.drain(100)).to.deep.equal({ admitted: ['r5'], expired: [] });
      expect(a.drain(300)).to.deep.equal({ admitted: ['r6', 'r7'], expired: [] });
      expect(a.queued).to.equal(0);
      expect(a.nextDrainInMs(300)).to.equal(undefined);
    });

    it('drops what waited queueMaxWaitMs (the client has retransmitted)', () => {
      const a = admission({ newLeasesPerSecond: 1, perMacPerSecond: 1 });
      for (let i = 0; i < 7; i++) a.admit(mac(i), 'unknown', `r${i}`, 0);
      expect(a.queued).to.equal(2);
      expect(a.nextDrainInMs(0)).to.equal(1000);
      const d = a.drain(1000);
      expect(d.expired).to.deep.equal(['r5', 'r6']);
      expect(d.admitted).to.deep.equal([]);
    });

    it('remembers at most trackedMacs buckets (the least recently seen forgotten first)', () => {
      const a = admission({ trackedMacs: 10, newLeasesBurst: 10_000, newLeasesPerSecond: 10_000, queueLength: 1 });
      for (let i = 0; i < 10_000; i++) a.admit(mac(i), 'unknown', `r${i}`, i);
      expect(a.trackedMacs).to.equal(10);
    });

    it('under a flood of 10,000 random MACs in one second admits no more than burst + rate (+ the queue, later)', () => {
      const a = new NewLeaseAdmission<number>(ADMISSION_DEFAULTS);
      let admitted = 0;
      for (let i = 0; i < 10_000; i++) {
        const now = Math.floor(i / 10); // 10 per ms
        if (a.admit(mac(i), 'unknown', i, now).kind === 'admit') admitted++;
        admitted += a.drain(now).admitted.length;
      }
      expect(admitted).to.be.at.most(ADMISSION_DEFAULTS.newLeasesBurst + ADMISSION_DEFAULTS.newLeasesPerSecond);
      expect(admitted).to.be.at.least(ADMISSION_DEFAULTS.newLeasesBurst);
      expect(a.queued).to.be.at.most(ADMISSION_DEFAULTS.queueLength);
    });

    it('hands back what waits when cleared', () => {
      const a = admission();
      for (let i = 0; i < 7; i++) a.admit(mac(i), 'unknown', `r${i}`, 0);
      expect(a.clear()).to.deep.equal(['r5', 'r6']);
      expect(a.queued).to.equal(0);
    });

    it('clears only what the filter picks: the rest keeps its place and its wait (a subnet\'s server stopping beside others)', () => {
      const a = admission();
      for (let i = 0; i < 8; i++) a.admit(mac(i), 'unknown', `r${i}`, 0); // r5, r6, r7 wait (the queue holds three)
      expect(a.clear((r) => r === 'r6')).to.deep.equal(['r6']);
      expect(a.queued).to.equal(2);
      // the survivors are still admitted first, in order, once tokens come back
      const later = a.drain(60_000);
      expect([...later.admitted, ...later.expired]).to.deep.equal(['r5', 'r7']);
    });
  });

  describe('admissionProblems', () => {
    it('accepts the defaults', () => {
      expect(admissionProblems(ADMISSION_DEFAULTS)).to.deep.equal([]);
    });

    it('names the setting of each problem', () => {
      expect(admissionProblems({ ...POLICY, newLeasesPerSecond: 0 }).map((p) => p.setting)).to.deep.equal(['--dhcp-new-lease-rate']);
      expect(admissionProblems({ ...POLICY, queueLength: Number.NaN }).map((p) => p.setting)).to.deep.equal(['--dhcp-queue-length']);
      expect(admissionProblems({ ...POLICY, perMacBurst: 8, newLeasesBurst: 4 })[0]?.message).to.match(/--dhcp-mac-burst/);
      expect(admissionProblems({ ...POLICY, perMacPerSecond: 20 })[0]?.setting).to.equal('--dhcp-mac-rate');
    });

    it('refuses to build an admission from an unusable policy', () => {
      expect(() => admission({ perMacBurst: 0.5 })).to.throw(/--dhcp-mac-burst/);
    });
  });
});
