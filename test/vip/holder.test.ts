import { expect } from 'chai';
import { Registry } from 'prom-client';
import { silentLogger } from '../../src/core/logger.js';
import { Announcer } from '../../src/vip/announcer.js';
import { holderHooks } from '../../src/vip/holder.js';
import { createVipMetrics } from '../../src/vip/metrics.js';
import type { InstallResult, VipTarget } from '../../src/vip/ports.js';
import { FakeClock } from '../support/fake-clock.js';

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
  announce(): Promise<number> {
    this.calls.push('announce');
    return Promise.resolve(2);
  }
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
    dependents: [{ start: () => (order.push('dhcp start'), Promise.resolve()), stop: () => (order.push('dhcp stop'), Promise.resolve()) }],
  });
  return { clock, target, order, hooks, metrics };
}

describe('holderHooks', () => {
  it('installs with a lifetime that ends before any follower may take over, and the renew deadline', async () => {
    const { clock, target, hooks } = setup();
    await clock.advance(10_000);
    await hooks.onLeading({ sentMs: 10_000 - 100 }); // the winning write took 100 ms
    // (3000 - 100 - 400) / 1000 → 2 s; deadline = sent + 2000
    expect(target.calls[0]).to.equal('install 2s deadline 11900');
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
    await hooks.onRenewed({ sentMs: 5000 - 1700 }); // 3000 - 1700 - 400 < 1000
    expect(target.calls).to.deep.equal([]);
    target.next = 'tooLate';
    await hooks.onRenewed({ sentMs: 5000 });
    expect(target.calls.filter((c) => c === 'announce')).to.have.length(0);
    expect((await metrics.renewFailures.get()).values.find((v) => v.labels.reason === 'tooLate')?.value).to.equal(1);
  });

  it('steps down in order: dependent work stops, then the VIP goes', async () => {
    const { target, hooks, order } = setup();
    await hooks.onStopLeading('shutdown');
    expect(order).to.deep.equal(['dhcp stop']);
    expect(target.calls).to.deep.equal(['remove']);
  });
});
