/**
 * The DHCP server under bad input and beside a second server, with real
 * clients, a real API server and the agent as a pod runs it:
 * - 100,000 mutated and random frames to port 67: the agent keeps running,
 *   writes nothing to the API server for them, and answers real clients that
 *   boot in the middle of the storm;
 * - two accidental servers (two agents holding two VIPs, one pool) on one
 *   segment: real clients booting at once never share an address.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { macFromBytes } from '../../src/core/mac.js';
import { decodeMessage } from '../../src/dhcp/message.js';
import { parseUdpFrame } from '../../src/dhcp/frame.js';
import * as native from '../../src/host/native.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { badFrame, FUZZ_KINDS, Rng } from '../support/dhcp-fuzz.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { dhcpLeasesInApi } from '../support/dhcp-leases.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const POOL = { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 };

/** Sums the samples of one metric (all label sets). */
function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

describe('DHCP bad input and accidental servers (system)', function () {
  this.timeout(5 * 60_000);
  let lab: VipWorld;
  const clients: Udhcpc[] = [];

  before(async function () {
    this.timeout(120_000);
    lab = await startVipLab({ nodes: 2, timings: TIMINGS, dhcp: { pool: POOL }, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
    lab.startAgent(0);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
    await lab.agents.waitForLog(0, '"DHCP serving"', 20_000);
    // the holder reserves its first addresses right after it starts serving (ADR 0011): the storm starts after that write
    const deadline = Date.now() + 20_000;
    while (!Object.keys((await pool()).status?.indexes ?? {}).some((k) => k.startsWith('dhcp-blk-'))) {
      if (Date.now() > deadline) throw new Error('the DHCP holder reserved no addresses within 20 s');
      await systemClock.sleep(100);
    }
  });
  after(async () => {
    for (const c of clients) c.stop();
    await lab?.stop();
  });

  async function pool(): Promise<IpPoolObject> {
    return lab.admin.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: lab.namespace, name: 'dhcp' });
  }
  async function blockVersions(): Promise<string[]> {
    const list = await lab.admin.resource(RESOURCES.dhcpLeaseBlock).list(lab.namespace);
    return list.items.map((b) => `${b.metadata.name ?? ''}@${b.metadata.resourceVersion ?? ''}`).sort();
  }
  async function claimNames(): Promise<string[]> {
    return (await lab.admin.resource(RESOURCES.ipClaim).list(lab.namespace)).items.map((c) => c.metadata.name!);
  }

  /** Sends `count` bad frames from `ns`, paced in bursts; returns how many each layer would reject. */
  async function storm(ns: string, count: number, seed: number): Promise<{ sent: number; frameRejected: number; codecRejected: number }> {
    const fd = native.openSocket(lab.net.path(ns), native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(fd, 'eth0');
      const srcMac = macFromBytes(new Uint8Array(info.mac));
      const rng = new Rng(seed);
      const bcast = Buffer.alloc(6, 0xff);
      let frameRejected = 0;
      let codecRejected = 0;
      for (let sent = 0; sent < count; ) {
        for (let i = 0; i < 500 && sent < count; i++, sent++) {
          const frame = badFrame(rng, FUZZ_KINDS[sent % FUZZ_KINDS.length]!, { srcMac: srcMac });
          const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
          if (!parsed.ok) frameRejected++;
          else if (!decodeMessage(parsed.payload).ok) codecRejected++;
          native.sendPacket(fd, info.index, native.ETH_P_IP, bcast, frame);
        }
        await systemClock.sleep(10); // ~50,000 frames/s at most: the server's socket buffer is not the thing under test
      }
      return { sent: count, frameRejected, codecRejected };
    } finally {
      native.close(fd);
    }
  }

  it('100,000 bad frames: the agent keeps running and writes nothing to the API server', async () => {
    const ns = lab.topology.addClient('fz1', '52:54:00:ee:00:01');
    const before = await pool();
    const claimsBefore = await claimNames();
    const blocksBefore = await blockVersions();
    const m0 = await lab.agents.metrics(0);
    const r = await storm(ns, 100_000, 0x1badd0c);
    // most of them are rejected by the frame or the codec layer; the rest are DISCOVERs, which write nothing
    expect(r.frameRejected + r.codecRejected).to.be.greaterThan(50_000);
    await systemClock.sleep(1000);
    expect(lab.agents.pid(0), 'the agent died').to.not.equal(undefined);
    const m1 = await lab.agents.metrics(0);
    const seen = metricSum(m1, 'ironet_dhcp_malformed_total') - metricSum(m0, 'ironet_dhcp_malformed_total');
    // frames the agent had no room to have parsed (the dissector's queue full at ~50,000 frames/s) are dropped unread, and counted
    const shed = (m: string): number => m.split('\n').filter((l) => l.startsWith('ironet_sandbox_dissector_requests_total{') && l.includes('kind="dhcpFrame"') && l.includes('outcome="queueFull"')).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    // the server saw (and rejected, or shed unread) most of what the generator knows is malformed: the storm reached it
    expect(seen + shed(m1) - shed(m0), 'malformed frames counted by the agent, or shed before parsing').to.be.greaterThan(0.8 * (r.frameRejected + r.codecRejected));
    expect(seen, 'malformed frames rejected by the agent').to.be.greaterThan(0.5 * (r.frameRejected + r.codecRejected));
    const after = await pool();
    expect(after.metadata.resourceVersion, 'the pool was written during the storm').to.equal(before.metadata.resourceVersion);
    expect(await claimNames()).to.deep.equal(claimsBefore);
    expect(await blockVersions(), 'a lease block was written during the storm').to.deep.equal(blocksBefore);
  });

  it('real clients that boot during a storm get leases', async () => {
    const ns = lab.topology.addClient('fz2', '52:54:00:ee:00:02');
    const stormDone = storm(ns, 30_000, 0xfeed);
    const c = [1, 2, 3].map((i) => new Udhcpc(lab.topology.addClient(`ok${i}`, `52:54:00:ee:01:0${i}`)));
    clients.push(...c);
    const bound = await Promise.all(c.map((x) => x.waitFor('bound', 0, 30_000)));
    await stormDone;
    expect(bound.map((b) => b.server)).to.deep.equal([VIP, VIP, VIP]);
    expect(new Set(bound.map((b) => b.ip)).size).to.equal(3);
    const leases = await dhcpLeasesInApi(lab.admin, lab.namespace, 'dhcp');
    expect([...leases].sort()).to.deep.equal(c.map((_, i) => [`52:54:00:ee:01:0${i + 1}`, bound[i]!.ip]));
    expect(lab.agents.pid(0)).to.not.equal(undefined);
  });

  it('two accidental servers (two VIPs, one pool) never hand out the same address', async () => {
    const VIP2 = '172.22.0.3';
    lab.startAgent(1, ['--vip', VIP2, '--lease-name', 'second-install']);
    await systemClock.sleep(3000);
    const c = Array.from({ length: 12 }, (_, i) => new Udhcpc(lab.topology.addClient(`two${i}`, `52:54:00:dd:00:${(16 + i).toString(16)}`)));
    clients.push(...c);
    const bound = await Promise.all(c.map((x) => x.waitFor('bound', 0, 60_000)));
    const servers = new Set(bound.map((b) => b.server));
    expect(new Set(bound.map((b) => b.ip)).size, JSON.stringify(bound)).to.equal(12);
    const leases = await dhcpLeasesInApi(lab.admin, lab.namespace, 'dhcp');
    for (let i = 0; i < c.length; i++) expect(leases.get(`52:54:00:dd:00:${(16 + i).toString(16)}`)).to.equal(bound[i]!.ip);
    expect(new Set(leases.values()).size, 'no address leased twice in the API server').to.equal(leases.size);
    // both servers were there: each answered someone, or the test proved nothing
    expect([...servers].sort()).to.deep.equal([VIP, VIP2]);
  });
});
