/**
 * The VIP never has two holders: three agents in three node namespaces, a real
 * API server reachable over a bridge, and faults on the current holder. An
 * observer records every add and delete of the VIP in every namespace
 * (netlink), so overlaps are measured, not sampled.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const CRASH_BOUND_MS = TIMINGS.leaseDurationMs + 1000;
const GRACEFUL_BOUND_MS = 1000;

describe('VIP failover (system)', function () {
  this.timeout(5 * 60_000);
  let lab: VipWorld;

  before(async function () {
    this.timeout(120_000);
    lab = await startVipLab({ timings: TIMINGS, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
    lab.startArpProbe();
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    const first = await lab.vip.nextHolder(0, 20_000);
    expect(first, 'an agent took the VIP').to.not.equal(undefined);
  });
  after(async () => {
    await lab?.stop();
  });
  afterEach(() => {
    expect(lab.vip.dualHolderMs(), 'time with two holders, over the whole run').to.equal(0);
    const arp = lab.arpStats();
    expect(arp.answers, 'the client gets ARP answers for the VIP').to.be.greaterThan(0);
    expect(arp.conflicts, `ARP probes (of ${arp.probes}) answered by two nodes`).to.equal(0);
  });

  /** The one node holding the VIP now; fails at once on two. */
  const holder = (): Promise<number> => lab.vip.singleHolder(5_000);

  async function restart(i: number): Promise<void> {
    await lab.agents.exited(i).catch(() => lab.agents.signal(i, 'SIGKILL'));
    lab.startAgent(i);
  }

  /** Runs `fault` on the holder; returns the failover time to another node. */
  async function trial(fault: (h: number) => void | Promise<void>, boundMs: number): Promise<{ from: number; to: number; ms: number }> {
    const h = await holder();
    const t0 = systemClock.monotonicMs();
    await fault(h);
    const next = await lab.vip.nextHolder(t0, boundMs + 2000, h);
    expect(next, 'a new holder').to.not.equal(undefined);
    const ms = next!.atMs - t0;
    expect(ms, `failover from node ${h} to ${next!.node}`).to.be.at.most(boundMs);
    expect(await lab.vip.holdersNow()).to.deep.equal([next!.node]);
    return { from: h, to: next!.node, ms };
  }

  for (let round = 1; round <= 2; round++) {
    it(`SIGTERM (graceful) — round ${round}: another node within ${GRACEFUL_BOUND_MS} ms`, async () => {
      const r = await trial((h) => lab.agents.signal(h, 'SIGTERM'), GRACEFUL_BOUND_MS);
      expect(await lab.agents.exited(r.from)).to.equal(0);
      await restart(r.from);
    });

    it(`SIGKILL — round ${round}: the kernel lifetime removes the VIP, another node within ${CRASH_BOUND_MS} ms`, async () => {
      const r = await trial((h) => lab.agents.signal(h, 'SIGKILL'), CRASH_BOUND_MS);
      await restart(r.from);
    });

    it(`SIGSTOP, then SIGCONT after the Lease expired — round ${round}: the resumed ex-holder never re-adds the VIP`, async () => {
      const r = await trial((h) => lab.agents.signal(h, 'SIGSTOP'), CRASH_BOUND_MS);
      const resumed = systemClock.monotonicMs();
      lab.agents.signal(r.from, 'SIGCONT');
      await systemClock.sleep(TIMINGS.leaseDurationMs);
      expect(lab.vip.addsSince(resumed, r.from), 'adds by the resumed ex-holder').to.equal(0);
      expect(await lab.vip.holdersNow()).to.deep.equal([r.to]);
    });

    it(`API server cut off from the holder only — round ${round}: it drops the VIP, another node takes over`, async () => {
      const r = await trial((h) => lab.faults.cutApi(h), CRASH_BOUND_MS);
      const cutOff = r.from;
      await systemClock.sleep(500);
      lab.faults.restoreApi(cutOff);
      await systemClock.sleep(TIMINGS.leaseDurationMs);
      expect(await lab.vip.holdersNow()).to.deep.equal([r.to]);
    });

    it(`the holder's provisioning link goes down — round ${round}: it steps down, another node within ${GRACEFUL_BOUND_MS} ms`, async () => {
      const r = await trial((h) => lab.faults.link(h, 'down'), GRACEFUL_BOUND_MS);
      lab.faults.link(r.from, 'up');
      await systemClock.sleep(500);
      expect(await lab.vip.holdersNow()).to.deep.equal([r.to]);
    });
  }

  it('the API server unreachable for every agent: the holder drops the VIP after renewDeadline (nobody holds), and one holder returns', async () => {
    const h = await holder();
    const t0 = systemClock.monotonicMs();
    for (let i = 0; i < lab.nodes.length; i++) lab.faults.cutApi(i);
    try {
      const deadline = t0 + TIMINGS.renewDeadlineMs + 1500;
      let dropped = false;
      while (systemClock.monotonicMs() < deadline) {
        if ((await lab.vip.holdersNow()).length === 0) {
          dropped = true;
          break;
        }
        await systemClock.sleep(50);
      }
      expect(dropped, 'the VIP was dropped').to.equal(true);
      expect(lab.vip.events.filter((e) => e.kind === 'del' && e.node === h && e.atMs >= t0)[0]!.atMs - t0).to.be.at.most(TIMINGS.renewDeadlineMs + 300);
      await systemClock.sleep(TIMINGS.leaseDurationMs);
      expect(await lab.vip.holdersNow(), 'no holder while the API server is away').to.deep.equal([]);
    } finally {
      for (let i = 0; i < lab.nodes.length; i++) lab.faults.restoreApi(i);
    }
    const back = await lab.vip.nextHolder(systemClock.monotonicMs(), 10_000);
    expect(back).to.not.equal(undefined);
    await systemClock.sleep(500);
    expect((await lab.vip.holdersNow()).length).to.equal(1);
  });
});
