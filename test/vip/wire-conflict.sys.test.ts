/**
 * The wire decides too (docs/vip.md "On the wire"): two elections on one
 * segment — nodes 0 and 1 campaign for one Lease ("cluster A"), node 2 for
 * another ("cluster B", as two clusters do during a pivot) — and a foreign
 * claimer on node 3 (a host configured with the VIP, then a real keepalived).
 * Each agent wins its own Lease; the kernel's address events in every node
 * (netlink) and a client asking "who has the VIP?" every 10 ms (the wire)
 * say how many MACs answered for it, and when.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const CLUSTER_B = ['--lease-name', 'ironet-vip-cluster-b'];
const FOREIGN = 3;

describe('VIP on the wire: two elections and foreign claimers on one segment (system)', function () {
  this.timeout(5 * 60_000);
  let lab: VipWorld;
  let keepalivedDir: string | undefined;
  let keepalived: ChildProcess | undefined;

  before(async function () {
    this.timeout(120_000);
    lab = await startVipLab({ nodes: 4, timings: TIMINGS, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
    lab.startArpProbe();
  });
  after(async () => {
    if (keepalived?.pid) await stopKeepalived();
    if (keepalivedDir) rmSync(keepalivedDir, { recursive: true, force: true });
    await lab?.stop();
  });

  function stopKeepalived(): Promise<void> {
    const k = keepalived;
    keepalived = undefined;
    if (!k || k.exitCode !== null || k.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      k.once('exit', () => resolve());
      k.kill('SIGTERM');
    });
  }

  async function metric(i: number, name: string): Promise<number> {
    const text = await lab.agents.metrics(i);
    return text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
  }

  async function soleHolder(timeoutMs: number, want?: number): Promise<number> {
    const deadline = systemClock.monotonicMs() + timeoutMs;
    for (;;) {
      const h = await lab.vip.holdersNow();
      if (h.length === 1 && (want === undefined || h[0] === want)) return h[0]!;
      if (systemClock.monotonicMs() > deadline) throw new Error(`holders now: [${h.join(',')}], wanted ${want ?? 'one'}`);
      await systemClock.sleep(20);
    }
  }

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const deadline = systemClock.monotonicMs() + timeoutMs;
    while (!(await check())) {
      if (systemClock.monotonicMs() > deadline) throw new Error(`timed out waiting for ${what}`);
      await systemClock.sleep(100);
    }
  }

  it('a second cluster’s agent wins its own Lease but never installs a VIP cluster A answers for; it takes it once A is gone', async () => {
    lab.startAgent(0);
    lab.startAgent(1);
    const a = await soleHolder(20_000);
    const t0 = systemClock.monotonicMs();
    const arp0 = lab.arpStats();
    lab.startAgent(2, CLUSTER_B);
    await lab.agents.waitForLog(2, 'not installing the VIP', 20_000);
    await until('agent 2 to say it is blocked', async () => (await metric(2, 'ironet_vip_wire_blocked')) === 1);
    await systemClock.sleep(2000); // several renews, each asking again
    expect(await lab.vip.holdersNow(), 'only cluster A holds it').to.deep.equal([a]);
    expect(lab.vip.addsSince(t0, 2), 'agent 2 never put it on').to.equal(0);
    expect(lab.vip.dualHolderMs(t0), 'two holders (kernel)').to.equal(0);
    expect(lab.arpStats().conflicts - arp0.conflicts, 'probes answered by two MACs').to.equal(0);

    // cluster A goes away gracefully (its agents stop): B takes the VIP within a renew and a probe
    const gone = systemClock.monotonicMs();
    lab.agents.signal(0, 'SIGTERM');
    lab.agents.signal(1, 'SIGTERM');
    const next = await lab.vip.nextHolder(gone, 5000);
    expect(next?.node, 'cluster B’s agent').to.equal(2);
    const gapMs = next!.atMs - gone;
    expect(gapMs, 'from A stopping to B holding').to.be.below(TIMINGS.retryPeriodMs + 100 + 1000);
    await lab.agents.exited(0);
    await lab.agents.exited(1);
    expect(lab.vip.dualHolderMs(t0)).to.equal(0);
    expect(await metric(2, 'ironet_vip_wire_blocked')).to.equal(0);
    expect(lab.arpStats().conflicts - arp0.conflicts).to.equal(0);
  });

  it('cluster A’s agent coming back finds B on the wire and waits; killed B (no handover) leaves it to A once its kernel lifetime ends', async () => {
    const t0 = systemClock.monotonicMs();
    const arp0 = lab.arpStats();
    lab.startAgent(0);
    await lab.agents.waitForLog(0, 'not installing the VIP', 20_000);
    expect(await lab.vip.holdersNow()).to.deep.equal([2]);
    const killed = systemClock.monotonicMs();
    lab.agents.signal(2, 'SIGKILL');
    const next = await lab.vip.nextHolder(killed, TIMINGS.leaseDurationMs + 3000, 2);
    expect(next?.node).to.equal(0);
    expect(next!.atMs - killed, 'within the kernel lifetime, a renew and a probe').to.be.below(TIMINGS.leaseDurationMs + TIMINGS.retryPeriodMs + 500);
    expect(lab.vip.dualHolderMs(t0), 'two holders (kernel)').to.equal(0);
    expect(lab.arpStats().conflicts - arp0.conflicts).to.equal(0);
    await lab.agents.exited(2).catch(() => undefined);
  });

  it('a host configured with the VIP: defended once, then yielded to (no announcement war); the holder takes it back when the host lets go', async () => {
    const holder = await soleHolder(5000, 0);
    const t0 = systemClock.monotonicMs();
    ip('-n', lab.nodes[FOREIGN]!, 'addr', 'add', `${VIP}/32`, 'dev', 'prov0');
    try {
      await lab.agents.waitForLog(holder, 'this agent yields it', 10_000);
      const yieldedAt = systemClock.monotonicMs();
      expect(yieldedAt - t0, 'found by the next checks (1 s apart), defended once, then yielded').to.be.below(3500);
      await soleHolder(2000, FOREIGN);
      expect(await metric(holder, 'ironet_vip_wire_conflicts_total{vip="172.22.0.2",foreign="other",outcome="defended"}')).to.equal(1);
      expect(await metric(holder, 'ironet_vip_wire_conflicts_total{vip="172.22.0.2",foreign="other",outcome="yielded"}')).to.equal(1);
      await systemClock.sleep(2000);
      expect(await lab.vip.holdersNow(), 'the agent stays off while the host answers').to.deep.equal([FOREIGN]);
      expect(await metric(holder, 'ironet_vip_wire_blocked')).to.equal(1);
    } finally {
      ip('-n', lab.nodes[FOREIGN]!, 'addr', 'del', `${VIP}/32`, 'dev', 'prov0');
    }
    const freed = systemClock.monotonicMs();
    const back = await lab.vip.nextHolder(freed, 3000);
    expect(back?.node).to.equal(holder);
    expect(lab.vip.dualHolderMs(freed), 'no overlap on taking it back').to.equal(0);
  });

  it('a forgotten keepalived (VRID 1) on the segment: the agent yields to it, and takes the VIP back when keepalived stops', async () => {
    const holder = await soleHolder(5000, 0);
    keepalivedDir = mkdtempSync(path.join(tmpdir(), 'irn-wire-keepalived-'));
    const conf = path.join(keepalivedDir, 'keepalived.conf');
    writeFileSync(conf, `global_defs {\n  router_id forgotten\n}\nvrrp_instance VI_1 {\n  state BACKUP\n  interface prov0\n  virtual_router_id 1\n  priority 101\n  advert_int 1\n  virtual_ipaddress {\n    ${VIP}/32 dev prov0\n  }\n}\n`);
    const started = systemClock.monotonicMs();
    keepalived = spawn(
      'ip',
      ['netns', 'exec', lab.nodes[FOREIGN]!, 'keepalived', '--dont-fork', '--vrrp', '--log-console', '-f', conf, '-p', path.join(keepalivedDir, 'main.pid'), '-r', path.join(keepalivedDir, 'vrrp.pid')],
      { stdio: 'ignore' },
    );
    process.once('exit', () => keepalived?.kill('SIGKILL'));
    const took = await lab.vip.nextHolder(started, 15_000, holder);
    expect(took?.node, 'keepalived becomes MASTER and adds the VIP').to.equal(FOREIGN);
    await lab.agents.waitForLog(holder, 'this agent yields it', 10_000);
    const alone = await soleHolder(3000, FOREIGN);
    expect(alone).to.equal(FOREIGN);
    const overlapMs = lab.vip.dualHolderMs(started);
    expect(overlapMs, 'keepalived never probes: the overlap is the agent’s time to yield').to.be.below(3000);
    await systemClock.sleep(1500);
    expect(await lab.vip.holdersNow()).to.deep.equal([FOREIGN]);
    const stopped = systemClock.monotonicMs();
    await stopKeepalived();
    const back = await lab.vip.nextHolder(stopped, 5000, FOREIGN);
    expect(back?.node).to.equal(holder);
    expect(lab.vip.dualHolderMs(stopped)).to.equal(0);
  });
});

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}
