import { expect } from 'chai';
import { Registry } from 'prom-client';
import { silentLogger } from '../../src/core/logger.js';
import { Announcer } from '../../src/vip/announcer.js';
import type { ElectorHooks } from '../../src/election/elector.js';
import { FENCE_MARGIN_MS } from '../../src/election/election.js';
import { DEPENDENT_START_TIMEOUT_MS, DEPENDENT_STOP_TIMEOUT_MS, HolderReports, holderHooks, type DependentWork } from '../../src/vip/holder.js';
import { createVipMetrics } from '../../src/vip/metrics.js';
import type { InstallResult, VipTarget, VipWire } from '../../src/vip/ports.js';
import type { Mac } from '../../src/core/mac.js';
import type { WireEvent } from '../../src/vip/holder.js';
import { WireGuard } from '../../src/vip/wire-guard.js';
import type { Heard, WireTrailer } from '../../src/vip/wire.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

class FakeTarget implements VipTarget {
  readonly description = '172.22.0.2/32 on prov0';
  readonly calls: string[] = [];
  next: InstallResult = 'added';
  install(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult> {
    this.calls.push(`install ${lifetimeSeconds}s deadline ${deadlineMs}`);
    return Promise.resolve(this.next);
  }
  remove(): Promise<boolean> {
    this.calls.push('remove');
    return Promise.resolve(true);
  }
  isPresent(): Promise<boolean> {
    return Promise.resolve(false);
  }
  announce(_trailer?: WireTrailer): Promise<number> {
    this.calls.push('announce');
    return Promise.resolve(2);
  }
}

/** A dependent whose runs record their start and stop in `order`. */
function run(order: string[], name: string, ready: () => Promise<void> = () => Promise.resolve()): DependentWork {
  return {
    start: () => {
      order.push(`${name} start`);
      return { ready: ready(), stop: () => (order.push(`${name} stop`), Promise.resolve()) };
    },
  };
}

function setup() {
  const clock = new FakeClock();
  const target = new FakeTarget();
  const order: string[] = [];
  const metrics = createVipMetrics(new Registry());
  const announcer = new Announcer({ schedule: { burstCount: 1, burstIntervalMs: 1000, refreshMs: 0 }, clock, logger: silentLogger, announce: () => target.announce() });
  const hooks = holderHooks({
    target,
    timings: TIMINGS,
    clock,
    logger: silentLogger,
    announcer,
    metrics,
    name: 'vip',
    dependents: [run(order, 'dhcp')],
  });
  return { clock, target, order, hooks, metrics };
}

describe('holderHooks', () => {
  it('installs with a lifetime that ends before any follower may take over, and the renew deadline', async () => {
    const { clock, target, hooks } = setup();
    await clock.advance(10_000);
    await hooks.onLeading({ sentMs: 10_000 - 100 }); // the winning write took 100 ms
    // (3000 - 100 - 1300) / 1000 → 1 s; the kernel must start it by sent + 3000 - 1300 - 1000 (before sent + 2000, the renew deadline)
    expect(target.calls[0]).to.equal('install 1s deadline 10600');
  });

  it('a longer lease: a longer lifetime, and the renew deadline when it comes first', async () => {
    const { clock, target } = setup();
    const hooks = holderHooks({ target, timings: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 }, clock, logger: silentLogger, announcer: new Announcer({ schedule: { burstCount: 1, burstIntervalMs: 1000, refreshMs: 0 }, clock, logger: silentLogger, announce: () => target.announce() }), name: 'vip', dependents: [] });
    await clock.advance(10_000);
    await hooks.onLeading({ sentMs: 10_000 - 200 });
    // (15000 - 200 - 1300) / 1000 → 13 s, to start by 9800 + 15000 - 1300 - 13000 = 10500 (the renew deadline, 19800, comes later)
    expect(target.calls[0]).to.equal('install 13s deadline 10500');
  });

  it('a send that returned after its deadline (the VIP withdrawn) ends the spell: dependent work stops, the metric counts it', async () => {
    const { clock, target, hooks, order, metrics } = setup();
    await hooks.onLeading({ sentMs: 0 });
    await clock.advance(1);
    expect(order).to.deep.equal(['dhcp start']);
    target.next = 'withdrawn';
    await hooks.onRenewed({ sentMs: 300 });
    await clock.advance(1);
    expect(order).to.deep.equal(['dhcp start', 'dhcp stop']);
    expect(target.calls.at(-1)).to.equal('remove');
    expect((await metrics.renewFailures.get()).values.find((v) => v.labels.reason === 'tooLate')?.value).to.equal(1);
    expect((await metrics.owned.get()).values[0]?.value).to.equal(0);
  });

  it('announces and starts dependent work after adding; refreshes do neither', async () => {
    const { clock, target, hooks, order } = setup();
    await hooks.onLeading({ sentMs: 0 });
    await clock.advance(1);
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(1);
    expect(order).to.deep.equal(['dhcp start']);
    target.next = 'refreshed';
    await hooks.onRenewed({ sentMs: 500 });
    await clock.advance(1);
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(1);
    expect(order).to.deep.equal(['dhcp start']);
  });

  it('acquiring while the address is still there (refreshed, not added) still starts the term: announce and dependent work', async () => {
    const { clock, target, hooks, order } = setup();
    target.next = 'refreshed';
    await hooks.onLeading({ sentMs: 0 });
    await clock.advance(1);
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(1);
    expect(order).to.deep.equal(['dhcp start']);
  });

  it('a renew that re-adds a lapsed VIP announces again', async () => {
    const { clock, target, hooks } = setup();
    target.next = 'added';
    await hooks.onRenewed({ sentMs: 0 });
    await clock.advance(1);
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(1);
  });

  it('does nothing when the renew came back too late for even a 1 s lifetime, or the deadline passed', async () => {
    const { clock, target, hooks, metrics } = setup();
    await clock.advance(5000);
    await hooks.onRenewed({ sentMs: 5000 - 800 }); // 3000 - 800 - 1300 < 1000
    expect(target.calls).to.deep.equal([]);
    target.next = 'tooLate';
    await hooks.onRenewed({ sentMs: 5000 });
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(0);
    expect((await metrics.renewFailures.get()).values.find((v) => v.labels.reason === 'tooLate')?.value).to.equal(1);
  });

  it('steps down in order: dependent work stops, then the VIP goes', async () => {
    const { clock, target, hooks, order } = setup();
    await hooks.onLeading({ sentMs: 0 });
    await clock.advance(1);
    await hooks.onStopLeading('shutdown');
    expect(order).to.deep.equal(['dhcp start', 'dhcp stop']);
    expect(target.calls.at(-1)).to.equal('remove');
  });

  it('a VIP left by an earlier process is removed without stopping work this process never started', async () => {
    const { target, hooks, order } = setup();
    await hooks.onStopLeading('shutdown');
    expect(order).to.deep.equal([]);
    expect(target.calls).to.deep.equal(['remove']);
  });

  describe('dependent work that misbehaves', () => {
    function world(dependents: readonly DependentWork[]) {
      const clock = new FakeClock();
      const target = new FakeTarget();
      const logger = new RecordingLogger();
      const announcer = new Announcer({ schedule: { burstCount: 1, burstIntervalMs: 1000, refreshMs: 0 }, clock, logger, announce: () => target.announce() });
      const hooks = holderHooks({ target, timings: TIMINGS, clock, logger, announcer, name: 'vip', dependents });
      return { clock, target, hooks, logger };
    }
    const never = (): Promise<void> => new Promise(() => undefined);

    it('a start that hangs keeps neither the elector (onLeading returns) nor the step-down waiting', async () => {
      const order: string[] = [];
      const { clock, target, hooks, logger } = world([run(order, 'dhcp', never)]);
      await hooks.onLeading({ sentMs: 0 }); // resolves although the run is never ready
      await clock.advance(DEPENDENT_START_TIMEOUT_MS);
      expect(logger.entries.some((e) => e.level === 'error' && e.msg?.includes('did not finish'))).to.equal(true);
      await hooks.onStopLeading('renewDeadlineExceeded');
      expect(order, 'the hung run is still asked to stop').to.deep.equal(['dhcp start', 'dhcp stop']);
      expect(target.calls.at(-1)).to.equal('remove');
    });

    it('a run still starting when its term ends is stopped; the next term gets a run of its own, which the old one never stops', async () => {
      const log: string[] = [];
      let term = 0;
      const readies: (() => void)[] = [];
      const dhcp: DependentWork = {
        start: () => {
          const mine = ++term;
          log.push(`start ${mine}`);
          return { ready: new Promise<void>((r) => readies.push(r)), stop: () => (log.push(`stop ${mine}`), Promise.resolve()) };
        },
      };
      const { clock, hooks } = world([dhcp]);
      await hooks.onLeading({ sentMs: 0 });
      await hooks.onStopLeading('renewDeadlineExceeded');
      await hooks.onLeading({ sentMs: 0 }); // re-acquired at once
      readies.forEach((r) => r()); // term 1's start finishes late
      await clock.advance(DEPENDENT_START_TIMEOUT_MS * 2);
      expect(log).to.deep.equal(['start 1', 'stop 1', 'start 2']);
      await hooks.onStopLeading('shutdown');
      expect(log).to.deep.equal(['start 1', 'stop 1', 'start 2', 'stop 2']);
    });

    it('stops that hang (DHCP, TFTP, the boot-script check) delay the VIP’s removal by at most DEPENDENT_STOP_TIMEOUT_MS in all, inside the fence margin', async () => {
      expect(DEPENDENT_STOP_TIMEOUT_MS).to.be.below(FENCE_MARGIN_MS);
      const hung = { start: () => ({ ready: Promise.resolve(), stop: never }) };
      const { clock, target, hooks } = world([hung, hung, hung]);
      await hooks.onLeading({ sentMs: 0 });
      await clock.advance(1);
      let removed = false;
      const stepping = hooks.onStopLeading('renewDeadlineExceeded').then(() => (removed = true));
      await clock.advance(DEPENDENT_STOP_TIMEOUT_MS - 1);
      expect(removed).to.equal(false);
      await clock.advance(1);
      await stepping;
      expect(target.calls.at(-1)).to.equal('remove');
    });

    it('a start that fails is logged and the next dependent still starts', async () => {
      const order: string[] = [];
      const { clock, hooks, logger } = world([run(order, 'dhcp', () => Promise.reject(new Error('socket: no such device'))), run(order, 'tftp')]);
      await hooks.onLeading({ sentMs: 0 });
      await clock.advance(1);
      expect(order).to.deep.equal(['dhcp start', 'tftp start']);
      expect(logger.entries.find((e) => e.level === 'error')?.fields['err']).to.match(/no such device/);
    });

    it('when the acquire-time install does not work, the term’s first install that does starts the work', async () => {
      const order: string[] = [];
      const { clock, target, hooks } = world([run(order, 'dhcp')]);
      target.next = 'tooLate';
      await hooks.onLeading({ sentMs: 0 });
      await clock.advance(1);
      expect(order).to.deep.equal([]);
      target.next = 'refreshed';
      await hooks.onRenewed({ sentMs: 500 });
      await clock.advance(1);
      expect(order).to.deep.equal(['dhcp start']);
      await hooks.onRenewed({ sentMs: 1000 });
      await clock.advance(1);
      expect(order, 'once per term').to.deep.equal(['dhcp start']);
    });
  });
});

describe('HolderReports: what the holder tells others, in order', () => {
  /** A reporter whose holding reports wait until released, recording every report told. */
  function reporter() {
    const told: string[] = [];
    const pending: (() => void)[] = [];
    return {
      told,
      releaseHolding: () => pending.shift()?.(),
      onHolding: (holding: boolean) => {
        told.push(`holding ${holding}`);
        return holding ? new Promise<void>((resolve) => pending.push(resolve)) : Promise.resolve();
      },
      onDhcp: (serving: boolean, message: string) => (told.push(`dhcp ${serving}${message ? ` ${message}` : ''}`), Promise.resolve()),
    };
  }
  function world(ready: () => Promise<void> = () => Promise.resolve()) {
    const r = reporter();
    const reports = new HolderReports(r);
    const order: string[] = [];
    const dhcp = reports.dhcp(run(order, 'dhcp', ready));
    // as holderHooks calls them: began() after a spell's first install, ending() before its end, ended() after the removal
    const hooks: ElectorHooks = {
      onLeading: () => {
        order.push('installed');
        reports.began();
        return Promise.resolve();
      },
      onRenewed: () => Promise.resolve(),
      onStopLeading: async () => {
        reports.ending();
        order.push('removed');
        await reports.ended();
      },
    };
    return { r, order, dhcp, hooks };
  }

  it('a term’s DHCP outcome is told only after its holding report is done', async () => {
    const { r, dhcp, hooks } = world();
    await hooks.onLeading({ sentMs: 0 });
    dhcp.start();
    await flushMicrotasks();
    expect(r.told, 'DHCP served, but "held" is not written yet').to.deep.equal(['holding true']);
    r.releaseHolding();
    await flushMicrotasks();
    expect(r.told).to.deep.equal(['holding true', 'dhcp true']);
  });

  it('a DHCP run started after the holding report is told at once; a failure is told with why', async () => {
    const { r, dhcp, hooks } = world(() => Promise.reject(new Error('no pool')));
    await hooks.onLeading({ sentMs: 0 });
    r.releaseHolding();
    await flushMicrotasks();
    dhcp.start();
    await flushMicrotasks();
    expect(r.told).to.deep.equal(['holding true', 'dhcp false no pool']);
  });

  it('a holding report that finishes after its term ended opens nothing of the next term', async () => {
    const { r, dhcp, hooks } = world();
    await hooks.onLeading({ sentMs: 0 });
    await hooks.onStopLeading('lostLease');
    await hooks.onLeading({ sentMs: 5000 });
    dhcp.start();
    r.releaseHolding(); // the first term's report, late
    await flushMicrotasks();
    expect(r.told, 'the second term’s DHCP waits for the second term’s report').to.deep.equal(['holding true', 'holding false', 'holding true']);
    r.releaseHolding();
    await flushMicrotasks();
    expect(r.told).to.deep.equal(['holding true', 'holding false', 'holding true', 'dhcp true']);
  });

  it('"not holding" is told after the VIP is removed and is awaited; a run stopped by its term’s end still tells its outcome then', async () => {
    const { r, order, dhcp, hooks } = world();
    await hooks.onLeading({ sentMs: 0 });
    dhcp.start();
    await hooks.onStopLeading('shutdown');
    expect(order).to.deep.equal(['installed', 'dhcp start', 'removed']);
    expect(r.told.slice(0, 2)).to.deep.equal(['holding true', 'holding false']);
    await flushMicrotasks();
    expect(r.told, 'the ended term opened its gate: its outcome comes after "not holding"').to.deep.equal(['holding true', 'holding false', 'dhcp true']);
  });
});


describe('holderHooks with the wire guard (docs/vip.md "On the wire")', () => {
  const OURS = '02:00:00:00:00:10' as Mac;
  const OTHER = '02:00:00:00:00:20' as Mac;

  /** A segment where `answering` MACs answer every probe (as their kernels would), and frames can be heard at will. */
  class FakeWire implements VipWire {
    readonly mac = OURS;
    readonly probes: WireTrailer[] = [];
    answering: Mac[] = [];
    /** Probes cannot go out (a full buffer, the link down). */
    unsendable = false;
    private readonly listeners = new Set<(h: Heard) => void>();
    probe(trailer: WireTrailer): boolean {
      if (this.unsendable) return false;
      this.probes.push(trailer);
      for (const mac of this.answering) queueMicrotask(() => this.hear({ mac, kind: 'uses' }));
      return true;
    }
    listen(onHeard: (h: Heard) => void): () => void {
      this.listeners.add(onHeard);
      return () => this.listeners.delete(onHeard);
    }
    hear(h: Heard): void {
      for (const l of this.listeners) l(h);
    }
  }

  function guarded() {
    const clock = new FakeClock();
    const target = new FakeTarget();
    const order: string[] = [];
    const wire = new FakeWire();
    const events: WireEvent[] = [];
    const metrics = createVipMetrics(new Registry());
    const guard = new WireGuard({ wire, clock, probeMs: 90, checkMs: 1000 });
    const announcer = new Announcer({ schedule: { burstCount: 1, burstIntervalMs: 1000, refreshMs: 0 }, clock, logger: silentLogger, announce: () => target.announce(guard.trailer()) });
    const told: boolean[] = [];
    const reports = new HolderReports({ onHolding: (h) => (told.push(h), Promise.resolve()) });
    const logger = new RecordingLogger();
    const hooks = holderHooks({ target, timings: TIMINGS, clock, logger, announcer, metrics, name: 'vip', dependents: [run(order, 'dhcp')], guard, reports, onWire: (e) => events.push(e) });
    return { clock, target, order, wire, events, hooks, metrics, told, logger };
  }

  it('probes before installing: three probes across the window, then the VIP goes on', async () => {
    const { clock, target, wire, hooks, order } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(29);
    expect(target.calls, 'nothing installed while asking').to.deep.equal([]);
    await clock.advance(61);
    await leading;
    expect(wire.probes).to.deep.equal([{ holding: false, sinceMs: 0 }, { holding: false, sinceMs: 0 }, { holding: false, sinceMs: 0 }]);
    expect(target.calls[0]).to.match(/^install/);
    await clock.advance(1);
    expect(order).to.deep.equal(['dhcp start']);
  });

  it('never installs a VIP another MAC answers for: keeps the Lease, says so once, asks again at each renew, installs once it is free', async () => {
    const { clock, target, wire, hooks, events, order, metrics, told } = guarded();
    wire.answering = [OTHER];
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(1);
    expect(target.calls, 'blocked at once').to.deep.equal([]);
    // the window is listened out: an ironet holder's trailer follows its kernel's answer
    await clock.advance(89);
    await leading;
    expect(target.calls, 'no install, no announcement').to.deep.equal([]);
    expect(events).to.deep.equal([{ outcome: 'blocked', claimer: { mac: OTHER, ironet: false } }]);
    expect((await metrics.wireBlocked.get()).values[0]?.value).to.equal(1);
    const renew = hooks.onRenewed({ sentMs: 500 });
    await clock.advance(90);
    await renew;
    expect(events, 'told once per claimer').to.have.length(1);
    wire.answering = [];
    const free = hooks.onRenewed({ sentMs: 1000 });
    await clock.advance(90);
    await free;
    expect(target.calls[0]).to.match(/^install/);
    expect(events.at(-1)).to.deep.equal({ outcome: 'cleared' });
    expect((await metrics.wireBlocked.get()).values[0]?.value).to.equal(0);
    await clock.advance(1);
    expect(order).to.deep.equal(['dhcp start']);
    expect(told).to.deep.equal([true]);
  });

  it('holding: a claimer that is not ironet is defended once (an announcement with our trailer), then yielded to; work stops, the VIP goes, "not holding" is told', async () => {
    const { clock, target, wire, hooks, events, order, told, metrics } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    await clock.advance(1);
    const announced = target.calls.filter((c) => c === 'announce').length;
    wire.hear({ mac: OTHER, kind: 'uses' });
    await clock.advance(1);
    expect(events.at(-1)).to.deep.equal({ outcome: 'defended', claimer: { mac: OTHER, ironet: false }, why: 'firstConflict' });
    expect(target.calls.filter((c) => c === 'announce').length).to.equal(announced + 1);
    wire.hear({ mac: OTHER, kind: 'uses' });
    await clock.advance(1);
    expect(events.at(-1)).to.deep.equal({ outcome: 'yielded', claimer: { mac: OTHER, ironet: false }, why: 'claimedAgain' });
    expect(target.calls.at(-1)).to.equal('remove');
    expect(order).to.deep.equal(['dhcp start', 'dhcp stop']);
    expect(told).to.deep.equal([true, false]);
    const byOutcome = Object.fromEntries((await metrics.wireConflicts.get()).values.map((v) => [`${v.labels.foreign}/${v.labels.outcome}`, v.value]));
    expect(byOutcome).to.deep.equal({ 'other/defended': 1, 'other/yielded': 1 });
    expect((await metrics.wireBlocked.get()).values[0]?.value, 'off until the wire is free').to.equal(1);
    // the next renew asks again: still answered, so it stays off
    wire.answering = [OTHER];
    const renew = hooks.onRenewed({ sentMs: 2000 });
    await clock.advance(90);
    await renew;
    expect(target.calls.filter((c) => c.startsWith('install'))).to.have.length(1);
  });

  it('a VIP whose kernel lifetime ran out before a renew (renews stalled) is not put back without a probe: the spell ends, the wire is asked again', async () => {
    const { clock, target, wire, hooks, order } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    await clock.advance(1);
    const probes = wire.probes.length;
    await clock.advance(5000); // far past any lifetime the timings allow
    const renew = hooks.onRenewed({ sentMs: clock.monotonicMs() });
    for (let i = 0; i < 30; i++) await clock.advance(10);
    await renew;
    expect(target.calls.filter((c) => c === 'remove'), 'the spell ended').to.have.length(1);
    expect(wire.probes.length, 'asked the wire again').to.be.greaterThan(probes);
    expect(target.calls.filter((c) => c.startsWith('install')), 'then on again').to.have.length(2);
    expect(order).to.deep.equal(['dhcp start', 'dhcp stop', 'dhcp start']);
  });

  it('fails closed: when no probe could be sent, the VIP is not installed (asked again at the next renew)', async () => {
    const { clock, target, wire, hooks, logger } = guarded();
    wire.unsendable = true;
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    expect(target.calls, 'nothing installed').to.deep.equal([]);
    expect(logger.entries.some((e) => (e.msg ?? '').includes('the wire could not be asked'))).to.equal(true);
    wire.unsendable = false;
    const renew = hooks.onRenewed({ sentMs: 500 });
    await clock.advance(90);
    await renew;
    expect(target.calls[0]).to.match(/^install/);
  });

  it('holding, asked by a probe: one announcement with our trailer (so the prober knows an ironet holder), not one per probe', async () => {
    const { clock, target, wire, hooks } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    await clock.advance(1);
    const before = target.calls.filter((c) => c === 'announce').length;
    wire.hear({ mac: OTHER, kind: 'probe' });
    await clock.advance(1);
    wire.hear({ mac: OTHER, kind: 'probe' });
    await clock.advance(1);
    expect(target.calls.filter((c) => c === 'announce').length).to.equal(before + 1);
  });

  it('blocked by a kernel\'s answer, then that MAC\'s trailer within the window: told as an ironet holder', async () => {
    const { clock, wire, hooks, events } = guarded();
    wire.answering = [OTHER];
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(5);
    wire.hear({ mac: OTHER, kind: 'uses', ironet: { holding: true, sinceMs: 1234 } });
    await clock.advance(90);
    await leading;
    expect(events).to.deep.equal([{ outcome: 'blocked', claimer: { mac: OTHER, ironet: true, sinceMs: 1234 } }]);
  });

  it('holding: an ironet holder that has held it longer wins; a younger one is defended against with our since', async () => {
    const { clock, target, wire, hooks, events } = guarded();
    await clock.advance(10_000);
    const leading = hooks.onLeading({ sentMs: 10_000 });
    await clock.advance(90);
    await leading;
    const since = clock.wallMs() - 90;
    wire.hear({ mac: OTHER, kind: 'uses', ironet: { holding: true, sinceMs: clock.wallMs() + 5 } });
    await clock.advance(1);
    expect(events.at(-1)).to.include({ outcome: 'defended', why: 'heldLonger' });
    expect(target.calls.includes('remove')).to.equal(false);
    wire.hear({ mac: OTHER, kind: 'uses', ironet: { holding: true, sinceMs: since - 1000 } });
    await clock.advance(1);
    expect(events.at(-1)).to.include({ outcome: 'yielded', why: 'heldLongerThere' });
    expect(target.calls.at(-1)).to.equal('remove');
  });

  it('holding: asks again every checkMs with its trailer (holding, since when)', async () => {
    const { clock, wire, hooks } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    const before = wire.probes.length;
    await clock.advance(3000);
    const checks = wire.probes.slice(before);
    expect(checks).to.have.length(3);
    expect(checks.every((t) => t.holding && t.sinceMs > 0)).to.equal(true);
  });

  it('stepping down ends the watch: a claim heard after it changes nothing', async () => {
    const { clock, target, wire, hooks, events } = guarded();
    const leading = hooks.onLeading({ sentMs: 0 });
    await clock.advance(90);
    await leading;
    await hooks.onStopLeading('shutdown');
    const calls = target.calls.length;
    wire.hear({ mac: OTHER, kind: 'uses' });
    wire.hear({ mac: OTHER, kind: 'uses' });
    await clock.advance(2000);
    expect(events).to.deep.equal([]);
    expect(target.calls.length).to.equal(calls);
  });
});
