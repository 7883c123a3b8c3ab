/**
 * ProxyDHCP beside the site's own DHCP server (system, QEMU): a real dnsmasq
 * on the provisioning bridge hands out addresses only (no boot options at
 * all); ironet's agents run with `--dhcp-mode proxy` (no pool) and the VIP
 * holder tells PXE clients what to boot, on 67 and on 4011 of the VIP.
 * Each machine passes only when it fetched boot.ipxe from the VIP from the
 * address dnsmasq leased it.
 * - BIOS: SeaBIOS + QEMU's iPXE ROM: dnsmasq's offer and the ProxyDHCP
 *   offer (this iPXE takes the boot file from the offer itself when it
 *   carries next-server and file; newer ones ask on 4011 too), then the
 *   script URL.
 * - UEFI: OVMF's EDK2 takes the "PXEClient" offer without option 43 as BINL:
 *   asks the VIP on 4011 for the boot file, TFTPs snponly-x86_64.efi from the
 *   VIP, and iPXE does the BIOS round again.
 */
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { formatIp } from '../../src/core/ip.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { DhcpCapture } from '../../src/lab/rig/dhcp-capture.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { Dnsmasq } from '../../src/lab/rig/dnsmasq.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools, tftpRoot, type Firmware } from '../../src/lab/rig/qemu.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab, VIP } from '../support/vip-lab.js';
import { decodeMessage } from '../../src/dhcp/message.js';
import { MSG, OPT, opt } from '../../src/dhcp/options.js';
import { ip as ipOf, macOf, requestBytes } from './fakes.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const SITE_DHCP = '172.22.0.240';

/** The sum of a counter's samples whose labels include every one of `labels`. */
function counted(metrics: string, name: string, labels: readonly string[]): number {
  return metrics
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('ProxyDHCP beside a site DHCP server (system, QEMU)', function () {
  this.timeout(10 * 60_000);
  let lab: VipWorld;
  let http: BootHttp;
  let dnsmasq: Dnsmasq;
  const machines: QemuMachine[] = [];
  const clients: Udhcpc[] = [];
  let capture: DhcpCapture;
  let taps = 0;

  before(async function () {
    this.timeout(120_000);
    requirePxeTools();
    lab = await startVipLab({ timings: TIMINGS, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
    // the site's server: addresses only (its range far from the nodes' and the VIP), no boot option of any kind
    const ns = lab.topology.addClient('site-dhcp', '52:54:00:ee:00:01');
    ip('-n', ns, 'addr', 'add', `${SITE_DHCP}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    dnsmasq = new Dnsmasq({ netns: ns, iface: 'eth0', range: '172.22.0.150,172.22.0.199,255.255.255.0,10m' });
    dnsmasq.start();
    http = new BootHttp(lab.nodes);
    capture = new DhcpCapture({ netnsPath: lab.topology.path(lab.topology.provisioning), clock: systemClock });
    const root = tftpRoot();
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i, ['--dhcp-mode', 'proxy', '--tftp-root', root]);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  after(async () => {
    for (const c of clients) c.stop();
    for (const m of machines) m.stop();
    capture?.close();
    http?.stop();
    await dnsmasq?.close();
    await lab?.stop();
  });

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
    capture.add(m.o.tap);
    return m;
  }

  /** Waits until the machine with `mac` fetched /boot.ipxe from the address dnsmasq leased it; returns that address. */
  async function reachedBootScript(m: QemuMachine, mac: string, timeoutMs: number): Promise<string> {
    const deadline = systemClock.monotonicMs() + timeoutMs;
    for (;;) {
      const leased = dnsmasq.leases().get(mac);
      if (leased && http.hitFrom(leased)) return leased;
      if (systemClock.monotonicMs() > deadline) {
        throw new Error(`${mac} did not fetch /boot.ipxe within ${timeoutMs} ms (dnsmasq lease ${leased ?? 'none'}; HTTP hits ${JSON.stringify(http.hits)}); console:\n${m.tail()}`);
      }
      await systemClock.sleep(250);
    }
  }

  // BIOS and UEFI machines boot side by side (QEMU's TCG leaves a core idle while a BIOS machine waits on the wire)
  it('BIOS + iPXE ROM: the address from dnsmasq, the script URL from the VIP (ProxyDHCP offer on 67); beside it UEFI (OVMF): BINL on 4011 for snponly-x86_64.efi, TFTP from the VIP, iPXE, then boot.ipxe; the address is dnsmasq\'s throughout', async () => {
    const mac = '52:54:00:41:00:01';
    const uefiMac = '52:54:00:42:00:01';
    const m = boot('bios', mac);
    const u = boot('uefi', uefiMac);
    const [leased, uefiLeased] = await Promise.all([reachedBootScript(m, mac, 120_000), reachedBootScript(u, uefiMac, 300_000)]);
    expect(leased).to.match(/^172\.22\.0\.(1[5-9]\d)$/);
    // from the wire: the VIP's answers carry no address and the script URL; every address came from dnsmasq
    const seen = capture.replies.filter((r) => r.mac === mac);
    const ours = seen.filter((r) => r.serverId === VIP);
    expect(ours.map((r) => `${r.type} ${r.yiaddr} ${r.bootFile}`)).to.include(`offer 0.0.0.0 http://${VIP}:6180/boot.ipxe`);
    expect(ours.every((r) => r.yiaddr === '0.0.0.0' && !r.ipxeNoProxyDhcp)).to.equal(true);
    expect(seen.filter((r) => r.yiaddr !== '0.0.0.0').every((r) => r.serverId === SITE_DHCP)).to.equal(true);
    const metrics = await lab.agents.metrics(lab.vip.holders()[0]!);
    expect(counted(metrics, 'ironet_proxydhcp_packets_total', ['port="67"', 'type="discover"', 'result="offer"']), 'ProxyDHCP offers on 67').to.be.greaterThan(0);
    // the client's REQUEST for dnsmasq's address is not ProxyDHCP's business
    expect(counted(metrics, 'ironet_proxydhcp_packets_total', ['port="67"', 'type="request"', 'result="notOurs"'])).to.be.greaterThan(0);
    expect(metrics).to.match(/ironet_sandbox_dissector_requests_total\{kind="dhcpFrame",outcome="ok"\} [1-9]/);

    expect(uefiLeased).to.match(/^172\.22\.0\.(1[5-9]\d)$/);
    const console = u.console.join('\n');
    expect(console).to.include(`Server IP address is ${VIP}`);
    expect(console).to.include('NBP filename is snponly-x86_64.efi');
    expect(console).to.include('NBP file downloaded successfully');
    expect(console).to.match(/iPXE \d/);
    // EDK2's BINL round: its REQUEST to VIP:4011, ACKed with the boot file; read by the holder's dissector, as 67's frames are
    expect(counted(metrics, 'ironet_proxydhcp_packets_total', ['port="4011"', 'type="request"', 'result="ack"']), 'ACKs on 4011').to.be.greaterThan(0);
    expect(metrics).to.match(/ironet_sandbox_dissector_requests_total\{kind="dhcpPayload",outcome="ok"\} [1-9]/);
  });

  it('4011 under junk: 2,000 junk datagrams are counted and dropped; a valid REQUEST after them is still ACKed with the boot file', async () => {
    const ns = lab.topology.addClient('junk-4011', '52:54:00:44:00:01');
    ip('-n', ns, 'addr', 'add', '172.22.0.245/24', 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    const valid = requestBytes({ type: MSG.request, mac: macOf(0x44), ciaddr: ipOf('172.22.0.245'), serverId: ipOf(VIP), options: [opt.str(OPT.vendorClass, 'PXEClient:Arch:00007:UNDI:003000'), [OPT.clientArch, Buffer.from([0, 7])]] });
    const SENDER = `
      const dgram = require('node:dgram');
      const s = dgram.createSocket('udp4');
      const valid = Buffer.from(process.argv[1], 'hex');
      s.on('message', (m) => { process.stdout.write(m.toString('hex') + '\\n'); process.exit(0); });
      s.bind(68, '172.22.0.245', async () => {
        for (let i = 0; i < 2000; i++) {
          const junk = Buffer.alloc(i % 600, i & 0xff);
          if (i % 3 === 0 && junk.length > 240) junk.writeUInt32BE(0x63825363, 236);
          s.send(junk, 4011, '${VIP}');
          if (i % 200 === 0) await new Promise((r) => setTimeout(r, 5));
        }
        s.send(valid, 4011, '${VIP}');
        setTimeout(() => s.send(valid, 4011, '${VIP}'), 1000);
        setTimeout(() => process.exit(3), 5000);
      });
    `;
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', SENDER, valid.toString('hex')], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status, `the sender: ${r.stderr}`).to.equal(0);
    const reply = decodeMessage(Buffer.from(r.stdout.trim(), 'hex'));
    expect(reply.ok && [reply.message.options.messageType, reply.message.options.bootfile, formatIp(reply.message.yiaddr)]).to.deep.equal([MSG.ack, 'snponly-x86_64.efi', '0.0.0.0']);
    const metrics = await lab.agents.metrics(lab.vip.holders()[0]!);
    // not all 2,000: a burst beyond the dissector's queue is shed unread (counted there), and some junk decodes (op 1 with the cookie) and is ignored by reason
    expect(counted(metrics, 'ironet_proxydhcp_packets_total', ['port="4011"', 'result="malformed"']), 'junk counted as malformed').to.be.greaterThan(500);
  });

  it('the VIP moves (the holder SIGKILLed): the next holder answers as ProxyDHCP at once (nothing to load), and a BIOS machine boots through it', async () => {
    const [h] = lab.vip.holders();
    expect(h, 'a holder').to.not.equal(undefined);
    const killedAt = systemClock.monotonicMs();
    lab.agents.signal(h!, 'SIGKILL');
    const next = await lab.vip.nextHolder(killedAt, TIMINGS.leaseDurationMs + 10_000, h);
    expect(next, 'another node took the VIP').to.not.equal(undefined);
    const mac = '52:54:00:41:00:02';
    const m = boot('bios', mac);
    await reachedBootScript(m, mac, 120_000);
    const metrics = await lab.agents.metrics(next!.node);
    expect(counted(metrics, 'ironet_proxydhcp_packets_total', ['port="67"', 'type="discover"', 'result="offer"']), 'the new holder offered').to.be.greaterThan(0);
    // the others answer nothing: ProxyDHCP runs only on the VIP holder (three nodes: one never held it)
    expect(lab.nodes.length).to.be.greaterThan(2);
    for (let i = 0; i < lab.nodes.length; i++) {
      if (i === h || i === next!.node) continue;
      expect(counted(await lab.agents.metrics(i), 'ironet_proxydhcp_packets_total', ['result="offer"']), `node ${i} (not holding) offered nothing`).to.equal(0);
    }
  });

  it('a client that is not PXE firmware (udhcpc) gets its address from dnsmasq and no ProxyDHCP answer (counted notPxeClient)', async () => {
    const holder = lab.vip.holders()[0]!;
    const before = counted(await lab.agents.metrics(holder), 'ironet_proxydhcp_packets_total', ['port="67"', 'type="discover"', 'result="notPxeClient"']);
    const c = new Udhcpc(lab.topology.addClient('plain-client', '52:54:00:43:00:01'));
    clients.push(c);
    const bound = await c.waitFor('bound');
    expect(bound.server, 'the site server answered').to.equal(SITE_DHCP);
    expect(counted(await lab.agents.metrics(holder), 'ironet_proxydhcp_packets_total', ['port="67"', 'type="discover"', 'result="notPxeClient"'])).to.be.greaterThan(before);
  });
});
