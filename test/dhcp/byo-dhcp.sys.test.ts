/**
 * Bring your own DHCP (docs/byo-dhcp.md), system, QEMU: each of the guide's
 * snippets — read from docs/byo-dhcp/, exactly as the guide shows it, its
 * placeholders filled in — runs a real server (dnsmasq, Kea, ISC dhcpd) on
 * the provisioning bridge, with ironet's DHCP off (its agents hold the VIP
 * and serve TFTP there, --tftp-root). A BIOS (SeaBIOS + iPXE ROM) and a UEFI
 * (OVMF) machine boot against it and must fetch boot.ipxe from the VIP,
 * from an address in the snippet's range.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { DhcpCapture } from '../../src/lab/rig/dhcp-capture.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools, tftpRoot, type Firmware } from '../../src/lab/rig/qemu.js';
import { SiteDhcp, type SiteDhcpKind } from '../../src/lab/rig/site-dhcp.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const SITE_DHCP = '172.22.0.240';
const GUIDE = 'docs/byo-dhcp.md';
const VALUES = { VIP, SUBNET: '172.22.0.0', PREFIX: '24', NETMASK: '255.255.255.0', RANGE_START: '172.22.0.150', RANGE_END: '172.22.0.199' };
const IN_RANGE = /^172\.22\.0\.(1[5-9]\d)$/;

const SERVERS: readonly { kind: SiteDhcpKind; file: string; binary: string; pkg: string; id: string }[] = [
  { kind: 'dnsmasq', file: 'docs/byo-dhcp/dnsmasq.conf', binary: '/usr/sbin/dnsmasq', pkg: 'dnsmasq-base', id: '1' },
  { kind: 'kea', file: 'docs/byo-dhcp/kea-dhcp4.json', binary: '/usr/sbin/kea-dhcp4', pkg: 'kea-dhcp4-server', id: '2' },
  { kind: 'dhcpd', file: 'docs/byo-dhcp/dhcpd.conf', binary: '/usr/sbin/dhcpd', pkg: 'isc-dhcp-server', id: '3' },
];

describe('bring your own DHCP: the guide\'s snippets boot PXE clients to the VIP (system, QEMU)', function () {
  this.timeout(15 * 60_000);
  let lab: VipWorld;
  let http: BootHttp;
  let ns: string;
  const machines: QemuMachine[] = [];
  let server: SiteDhcp | undefined;
  let capture: DhcpCapture;
  let taps = 0;

  before(async function () {
    this.timeout(120_000);
    requirePxeTools();
    for (const s of SERVERS) {
      try {
        readFileSync(s.binary);
      } catch {
        throw new Error(`${s.binary} is missing: run \`sh scripts/setup.sh\` as root (or apt-get install ${s.pkg})`);
      }
    }
    lab = await startVipLab({ timings: TIMINGS, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
    ns = lab.topology.addClient('site-dhcp', '52:54:00:ee:00:02');
    ip('-n', ns, 'addr', 'add', `${SITE_DHCP}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    http = new BootHttp(lab.nodes);
    // the replies each machine gets, seen on its tap (what the snippet made the server send)
    capture = new DhcpCapture({ netnsPath: lab.topology.path(lab.topology.provisioning), clock: systemClock });
    // ironet's DHCP off (no --dhcp-pool): the VIP and TFTP on it only
    const root = tftpRoot();
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i, ['--tftp-root', root]);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  afterEach(async () => {
    for (const m of machines.splice(0)) m.stop();
    await server?.close();
    server = undefined;
  });
  after(async () => {
    capture?.close();
    http?.stop();
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

  /** The address from which the machine fetched /boot.ipxe (iPXE prints its address first). */
  async function reachedBootScript(m: QemuMachine, mac: string, timeoutMs: number): Promise<string> {
    const deadline = systemClock.monotonicMs() + timeoutMs;
    for (;;) {
      // iPXE prints "net0: <address>/<mask>" once configured; the HTTP hit must come from that address
      const addresses = [...m.console.join('\n').matchAll(/net0: (\d+\.\d+\.\d+\.\d+)\//g)].map((x) => x[1]!);
      const hit = addresses.find((a) => http.hitFrom(a));
      if (hit) return hit;
      if (systemClock.monotonicMs() > deadline) {
        throw new Error(`${mac} did not fetch /boot.ipxe within ${timeoutMs} ms (addresses ${addresses.join(',') || 'none'}; HTTP hits ${JSON.stringify(http.hits)}); server:\n${server?.tail()}\nconsole:\n${m.tail()}`);
      }
      await systemClock.sleep(250);
    }
  }

  it('the guide shows each snippet exactly as stored (the tests run those files)', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    for (const s of SERVERS) expect(guide, `${GUIDE} shows ${s.file}`).to.include(readFileSync(s.file, 'utf8').trimEnd());
  });

  for (const s of SERVERS) {
    it(`${s.kind} (${s.file}): BIOS and UEFI machines reach boot.ipxe on the VIP from an address in its range`, async () => {
      server = new SiteDhcp({ kind: s.kind, netns: ns, iface: 'eth0', configFile: s.file, values: VALUES });
      server.start();
      await systemClock.sleep(1500);
      expect(server.running, `${s.kind} runs with the snippet:\n${server.tail()}`).to.equal(true);
      const bios = `52:54:00:5${s.id}:00:01`;
      const uefi = `52:54:00:5${s.id}:00:02`;
      const [b, u] = [boot('bios', bios), boot('uefi', uefi)];
      const [biosAt, uefiAt] = await Promise.all([reachedBootScript(b, bios, 180_000), reachedBootScript(u, uefi, 400_000)]);
      expect(biosAt).to.match(IN_RANGE);
      expect(uefiAt).to.match(IN_RANGE);
      // UEFI fetched the first stage by TFTP from the VIP (ironet's --tftp-root), as the snippet says
      const console = u.console.join('\n');
      expect(console).to.include('NBP filename is snponly-x86_64.efi');
      expect(console).to.include('NBP file downloaded successfully');
      expect(console).to.include(`Server IP address is ${VIP}`);
      // from the wire: the firmware was told the first stage, iPXE the script URL with 175.176 = 1 (no ProxyDHCP wait)
      const acks = (mac: string) => capture.replies.filter((r) => r.mac === mac && r.type === 'ack');
      const script = `http://${VIP}:6180/boot.ipxe`;
      expect(acks(uefi).map((r) => r.bootFile)).to.include('snponly-x86_64.efi');
      for (const mac of [bios, uefi]) {
        const ipxe = acks(mac).filter((r) => r.bootFile === script);
        expect(ipxe, `${mac}: an ACK with the script URL`).to.not.have.length(0);
        expect(ipxe.every((r) => r.ipxeNoProxyDhcp), `${mac}: 175.176 = 1 with it`).to.equal(true);
        expect(acks(mac).every((r) => r.serverId === SITE_DHCP), `${mac}: only the site's server answered`).to.equal(true);
      }
    });
  }
});
