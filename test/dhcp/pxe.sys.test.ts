/**
 * Real PXE clients against the agent: QEMU machines on the provisioning
 * bridge boot from the network and must reach boot.ipxe on the VIP.
 * - BIOS: SeaBIOS + QEMU's iPXE ROM; DHCPs as iPXE, gets the script URL.
 * - UEFI: OVMF + EDK2's PXE (arch 7); gets snponly-x86_64.efi by TFTP from
 *   the agent, which chains into iPXE, which DHCPs again and gets the URL.
 * Each passes only when its MAC's machine made the HTTP request (by source
 * address = its lease).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { FENCE_MARGIN_MS } from '../../src/election/election.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { QemuMachine, requirePxeTools, tftpRoot, type Firmware } from '../../src/lab/rig/qemu.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

describe('PXE boot (system, QEMU)', function () {
  this.timeout(10 * 60_000);
  let lab: VipWorld;
  let http: BootHttp;
  const machines: QemuMachine[] = [];
  let taps = 0;
  let forger: ChildProcess | undefined;

  before(async function () {
    this.timeout(120_000);
    requirePxeTools();
    lab = await startVipLab({
      timings: TIMINGS,
      dhcp: {
        pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 },
        agentArgs: ['--tftp-root', tftpRoot()],
      },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    http = new BootHttp(lab.nodes);
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  after(async () => {
    forger?.kill('SIGKILL');
    for (const m of machines) m.stop();
    http?.stop();
    await lab?.stop();
  });

  /** The address durable in the API server for a MAC (its lease block, or its pool entry). */
  const leaseOf = (mac: string): Promise<string | undefined> => dhcpLeaseOf(lab.admin, lab.namespace, 'dhcp', mac);

  function boot(firmware: Firmware, mac: string): QemuMachine {
    const m = new QemuMachine({
      bridgeNs: lab.topology.provisioning,
      bridge: 'provbr',
      tap: `tap${taps++}`,
      mac,
      firmware,
      logFile: process.env.IRONET_TEST_LOG ? `/tmp/qemu-${mac.replaceAll(':', '')}.log` : undefined,
    });
    machines.push(m);
    return m;
  }

  /** Waits until the machine with `mac` fetched /boot.ipxe from its leased address; returns that address. */
  async function reachedBootScript(m: QemuMachine, mac: string, timeoutMs: number): Promise<string> {
    const deadline = systemClock.monotonicMs() + timeoutMs;
    for (;;) {
      const ip = await leaseOf(mac);
      if (ip && http.hits.some((h) => h.path === '/boot.ipxe' && h.from.replace(/^::ffff:/, '') === ip)) return ip;
      if (systemClock.monotonicMs() > deadline) {
        throw new Error(`${mac} did not fetch /boot.ipxe within ${timeoutMs} ms (lease ${ip ?? 'none'}; HTTP hits ${JSON.stringify(http.hits)}); console:\n${m.tail()}`);
      }
      await systemClock.sleep(250);
    }
  }

  // BIOS and UEFI machines boot side by side (QEMU's TCG leaves a core idle while a BIOS machine waits on the wire)
  it('BIOS + iPXE ROM: DHCPs as iPXE and fetches boot.ipxe from the VIP; beside it UEFI (OVMF, arch 7): TFTP snponly-x86_64.efi from the agent, chains into iPXE, fetches boot.ipxe', async () => {
    const biosMac = '52:54:00:10:00:01';
    const mac = '52:54:00:20:00:01';
    const b = boot('bios', biosMac);
    const m = boot('uefi', mac);
    const [ip] = await Promise.all([reachedBootScript(b, biosMac, 120_000), reachedBootScript(m, mac, 300_000)]);
    expect(ip).to.match(/^172\.22\.0\.\d+$/);
    expect(http.hits.find((h) => h.from.endsWith(ip))!.path).to.equal('/boot.ipxe');
    // EDK2 took the agent's offer (no ProxyDHCP/BINL round), fetched the file by TFTP from the VIP, and iPXE ran it
    const console = m.console.join('\n');
    expect(console).to.include(`Server IP address is ${VIP}`);
    expect(console).to.include('NBP filename is snponly-x86_64.efi');
    expect(console).to.include('NBP file downloaded successfully');
    expect(console).to.match(/iPXE \d/);
    // every DHCP frame and TFTP datagram was read by the holder's dissector (no agent here parses in-process)
    const metrics = await lab.agents.metrics(lab.vip.holders()[0]!);
    expect(metrics).to.match(/ironet_sandbox_dissector_requests_total\{kind="dhcpFrame",outcome="ok"\} [1-9]/);
    expect(metrics).to.match(/ironet_sandbox_dissector_requests_total\{kind="tftpPacket",outcome="ok"\} [1-9]/);
    expect(metrics).to.match(/ironet_sandbox_dissector_up 1/);
  });

  it('64 forged RRQs in flight, again every 0.5 s (timeout 255 s, from 64 addresses that never answer): a UEFI machine still gets its file by TFTP and boots; beside it six BIOS machines booting at once all reach boot.ipxe with distinct addresses', async () => {
    // a host on the segment with 64 addresses, one RRQ from each, none ever acknowledged: every transfer slot taken
    const ns = lab.topology.addClient('forger', '52:54:00:66:00:01');
    const addresses = Array.from({ length: 64 }, (_, i) => `172.22.0.${150 + i}`);
    for (const a of addresses) spawnSync('ip', ['-n', ns, 'addr', 'add', `${a}/24`, 'dev', 'eth0']);
    spawnSync('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    const FORGER = `
      const dgram = require('node:dgram');
      const rrq = Buffer.from('\\x00\\x01snponly-x86_64.efi\\x00octet\\x00timeout\\x00255\\x00blksize\\x001468\\x00', 'latin1');
      const held = [];
      for (const a of process.argv.slice(1)) {
        const s = dgram.createSocket('udp4');
        s.bind(0, a, () => s.send(rrq, 69, '${VIP}'));
        held.push(s); // never answers what comes back
      }
      // asked again and again, as a flood would: every slot stays taken
      setInterval(() => held.forEach((s) => s.send(rrq, 69, '${VIP}', () => undefined)), 500);
      setTimeout(() => process.exit(0), 600000);
    `;
    forger = spawn('ip', ['netns', 'exec', ns, 'setpriv', '--pdeathsig', 'KILL', '--', process.execPath, '-e', FORGER, ...addresses], { stdio: 'ignore' });
    await systemClock.sleep(1500);
    const mac = '52:54:00:20:00:02';
    const m = boot('uefi', mac);
    const macs = [1, 2, 3, 4, 5, 6].map((i) => `52:54:00:30:00:0${i}`);
    const ms = macs.map((bios) => boot('bios', bios));
    const [, ...ips] = await Promise.all([reachedBootScript(m, mac, 300_000), ...ms.map((b, i) => reachedBootScript(b, macs[i]!, 240_000))]);
    expect(new Set(ips).size, 'six distinct addresses').to.equal(6);
    expect(VIP).to.not.be.oneOf(ips);
    expect(m.console.join('\n')).to.include('NBP file downloaded successfully');
    const holder = lab.vip.holders()[0]!;
    const metrics = await lab.agents.metrics(holder);
    const evicted = metrics.split('\n').filter((l) => l.startsWith('ironet_tftp_transfers_total') && l.includes('reason="evicted"')).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    expect(evicted, 'forged transfers ended to make room').to.be.greaterThan(0);
  });

  it('the holder cut off from the API server while it serves DHCP and TFTP (the forged transfers still in flight): it stops both and removes the VIP by its fence, before another node adds it', async () => {
    const [h] = await lab.vip.holdersNow();
    expect(h, 'a holder').to.not.equal(undefined);
    const tftpEnded = async (): Promise<number> =>
      (await lab.agents.metrics(h!)).split('\n').filter((l) => l.startsWith('ironet_tftp_transfers_total')).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    const before = await tftpEnded();
    await systemClock.sleep(1500);
    expect(await tftpEnded(), 'the holder is busy with TFTP (forged transfers ending and starting)').to.be.greaterThan(before);
    const cutAt = systemClock.monotonicMs();
    lab.faults.cutApi(h!);
    try {
      const next = await lab.vip.nextHolder(cutAt, TIMINGS.leaseDurationMs + 5000, h);
      expect(next, 'another node took the VIP').to.not.equal(undefined);
      const removed = lab.vip.events.find((e) => e.node === h && e.kind === 'del' && e.atMs >= cutAt);
      expect(removed, 'the cut-off holder removed the VIP').to.not.equal(undefined);
      // its last renew went out before the cut: the fence is due by cut + renewDeadline, the VIP gone within the margin after
      expect(removed!.atMs - cutAt, 'cut to VIP removed (ms)').to.be.at.most(TIMINGS.renewDeadlineMs + FENCE_MARGIN_MS);
      expect(next!.atMs, 'the next holder adds it only after').to.be.greaterThan(removed!.atMs);
      expect(lab.vip.dualHolderMs()).to.equal(0);
    } finally {
      lab.faults.restoreApi(h!);
    }
  });
});
