/**
 * The VIP target on real interfaces in real network namespaces: every write
 * lands in the target namespace and nowhere else, the kernel lifetime removes
 * the address, a passed deadline installs nothing, and announcements go out on
 * the wire.
 */
import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { systemClock } from '../../src/core/clock.js';
import { LIFETIME_SLACK_MS } from '../../src/election/election.js';
import { parseIp } from '../../src/core/ip.js';
import * as native from '../../src/host/native.js';
import { NetnsVip } from '../../src/host/netns-vip.js';
import { requireRoot, sweepStale, NetnsSet } from '../../src/lab/rig/netns-set.js';

describe('NetnsVip (system)', function () {
  this.timeout(20_000);
  let net: NetnsSet;
  let vips: NetnsVip[] = [];
  before(() => {
    requireRoot();
    sweepStale();
  });
  beforeEach(() => {
    net = new NetnsSet();
  });
  afterEach(() => {
    for (const v of vips) v.close();
    vips = [];
    net.cleanup();
  });

  function pair(): { a: string; b: string } {
    const a = net.netns('a');
    const b = net.netns('b');
    net.veth({ ns: a, name: 'prov0' }, { ns: b, name: 'peer0' });
    return { a, b };
  }

  function open(ns: string, vip: string, iface = 'prov0'): NetnsVip {
    const v = NetnsVip.open({ netnsPath: net.path(ns), iface, vip: parseIp(vip) });
    vips.push(v);
    return v;
  }

  const future = (): number => systemClock.monotonicMs() + 5000;

  it('adds, refreshes and removes the VIP in the target namespace only (IPv4 and IPv6)', async () => {
    const { a, b } = pair();
    const v4 = open(a, '172.22.0.2');
    const v6 = open(a, 'fd00:22::2');
    expect(await v4.install(30, future())).to.equal('added');
    expect(await v4.install(30, future())).to.equal('refreshed');
    expect(await v6.install(30, future())).to.equal('added');
    expect(net.addresses(a, 'prov0')).to.include.members(['172.22.0.2', 'fd00:22::2']);
    expect(net.addresses(b)).to.not.include.members(['172.22.0.2']);
    expect(net.addresses(null)).to.not.include('172.22.0.2');
    expect(net.addresses(null)).to.not.include('fd00:22::2');
    expect(await v4.isPresent()).to.equal(true);
    expect(await v4.remove()).to.equal(true);
    expect(await v4.remove()).to.equal(false);
    expect(net.addresses(a, 'prov0')).to.not.include('172.22.0.2');
    expect(await v6.remove()).to.equal(true);
  });

  it('lets the kernel remove the VIP when its lifetime runs out (the dead-man switch)', async () => {
    const { a } = pair();
    const v = open(a, '172.22.0.3');
    expect(await v.install(1, future())).to.equal('added');
    const started = Date.now();
    while (net.addresses(a, 'prov0').includes('172.22.0.3')) {
      if (Date.now() - started > 4000) throw new Error('the kernel did not remove the address');
      await new Promise((r) => setTimeout(r, 50));
    }
    const elapsed = Date.now() - started;
    expect(elapsed).to.be.within(700, 2500);
  });

  it('installs nothing once the deadline has passed', async () => {
    const { a } = pair();
    const v = open(a, '172.22.0.4');
    expect(await v.install(30, systemClock.monotonicMs() - 1)).to.equal('tooLate');
    expect(net.addresses(a, 'prov0')).to.not.include('172.22.0.4');
  });

  it('takes a VIP whose send returned after its deadline off again (withdrawn), and leaves one sent in time', async () => {
    const { a } = pair();
    const v = open(a, '172.22.0.5');
    // deadlines a few microseconds after now: some pass before the send (tooLate), some while it runs (withdrawn)
    const seen = new Set<string>();
    for (let i = 0; i < 4000 && !(seen.has('withdrawn') && seen.has('added')); i++) {
      const deadlineMs = systemClock.monotonicMs() + (i % 200) / 1000; // 0–199 µs ahead
      const result = await v.install(30, deadlineMs);
      seen.add(result);
      const present = net.addresses(a, 'prov0').includes('172.22.0.5');
      expect(present, `after '${result}'`).to.equal(result === 'added' || result === 'refreshed');
      if (present) await v.remove();
    }
    expect([...seen]).to.include.members(['withdrawn', 'added']);
  });

  it('the kernel removes an address up to 1.25 s past its lifetime when another changed just before: inside the 1.3 s budgeted', async function () {
    const { a } = pair();
    const v = open(a, '172.22.0.6');
    const lateness: number[] = [];
    for (const changeAtMs of [800, 950]) {
      const setAt = systemClock.monotonicMs();
      expect(await v.install(1, future())).to.equal('added');
      await new Promise((r) => setTimeout(r, setAt + changeAtMs - systemClock.monotonicMs()));
      net.run('ip', '-n', a, 'addr', 'add', `172.22.9.${changeAtMs % 250}/32`, 'dev', 'prov0');
      while (net.addresses(a, 'prov0').includes('172.22.0.6')) {
        if (systemClock.monotonicMs() - setAt > 5000) throw new Error('the kernel did not remove the address');
        await new Promise((r) => setTimeout(r, 5));
      }
      lateness.push(Math.round(systemClock.monotonicMs() - setAt - 1000));
    }
    this.test!.title += ` (measured: ${lateness.join(', ')} ms late)`;
    for (const late of lateness) expect(late).to.be.at.most(LIFETIME_SLACK_MS);
  });

  it('announces on the wire: gratuitous ARP request and reply, and an unsolicited NA', async () => {
    const { a, b } = pair();
    const fd = native.openSocket(net.path(b), native.AF_PACKET, native.SOCK_RAW, native.ETH_P_ALL);
    const seen: Buffer[] = [];
    const rx = new native.Receiver(fd, (data) => seen.push(Buffer.from(data)), () => {});
    try {
      native.bindPacket(fd, native.interfaceInfo(fd, 'peer0').index, native.ETH_P_ALL);
      const v4 = open(a, '172.22.0.5');
      const v6 = open(a, 'fd00:22::5');
      expect(await v4.announce()).to.equal(2);
      expect(await v6.announce()).to.equal(1);
      const deadline = Date.now() + 2000;
      while (seen.filter((f) => f.readUInt16BE(12) === 0x0806 || (f.readUInt16BE(12) === 0x86dd && f[54] === 136)).length < 3 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const arps = seen.filter((f) => f.readUInt16BE(12) === 0x0806 && f.subarray(28, 32).toString('hex') === 'ac160005');
      expect(arps.map((f) => f.readUInt16BE(20)).sort()).to.deep.equal([1, 2]);
      expect(arps[0]!.subarray(6, 12).toString('hex')).to.equal(v4.mac.replaceAll(':', ''));
      const na = seen.find((f) => f.readUInt16BE(12) === 0x86dd && f[54] === 136);
      expect(na?.subarray(62, 78).toString('hex')).to.equal('fd000022000000000000000000000005');
    } finally {
      rx.close();
      native.close(fd);
    }
  });

  it('reports link changes of the target interface', async () => {
    const { a } = pair();
    const v = open(a, '172.22.0.6');
    const states: boolean[] = [];
    const stop = v.watchLink((up) => states.push(up));
    try {
      const wait = async (n: number): Promise<void> => {
        const deadline = Date.now() + 3000;
        while (states.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      };
      await wait(1);
      expect(states[0]).to.equal(true);
      net.run('ip', '-n', a, 'link', 'set', 'prov0', 'down');
      await wait(2);
      expect(states.at(-1)).to.equal(false);
      net.run('ip', '-n', a, 'link', 'set', 'prov0', 'up');
      const deadline = Date.now() + 3000;
      while (states.at(-1) !== true && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(states.at(-1)).to.equal(true);
    } finally {
      stop();
    }
  });

  it('names what is missing: an unknown interface or namespace', () => {
    const { a } = pair();
    expect(() => open(a, '172.22.0.7', 'nope0')).to.throw(/nope0|ENODEV/);
    expect(() => NetnsVip.open({ netnsPath: '/var/run/netns/irn-missing', iface: 'prov0', vip: parseIp('172.22.0.7') })).to.throw(/irn-missing|ENOENT/);
  });
});
