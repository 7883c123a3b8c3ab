/**
 * UEFI HTTP boot against the agent (issue 21, ADR 0033): a QEMU machine with
 * OVMF whose PXE is turned off (so its first boot option is "UEFI HTTPv4")
 * DHCPs as `HTTPClient:Arch:00016`, must be offered the URL of iPXE's EFI
 * program on the VIP with option 60 `HTTPClient` echoed, fetch it by HTTP
 * through the VIP, run it, and iPXE must DHCP again and fetch boot.ipxe from
 * the VIP. It passes only when the machine's own leased address made both
 * requests, to the VIP.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { DhcpCapture } from '../../src/lab/rig/dhcp-capture.js';
import { QemuMachine, requirePxeTools, tftpRoot } from '../../src/lab/rig/qemu.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const EFI_PATH = '/snponly-x86_64.efi';
const HTTP_BOOT_URL = `http://${VIP}:6180${EFI_PATH}`;
const BOOT_SCRIPT_URL = `http://${VIP}:6180/boot.ipxe`;

describe('UEFI HTTP boot (system, QEMU OVMF)', function () {
  this.timeout(10 * 60_000);
  let lab: VipWorld;
  let http: BootHttp;
  let capture: DhcpCapture | undefined;
  const machines: QemuMachine[] = [];

  before(async function () {
    this.timeout(120_000);
    requirePxeTools();
    lab = await startVipLab({
      timings: TIMINGS,
      dhcp: {
        pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 },
        agentArgs: ['--tftp-root', tftpRoot(), '--http-boot-url', HTTP_BOOT_URL],
      },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    // Ironic's httpd stand-in on every node: boot.ipxe, and Debian's iPXE EFI build under the name the URL gives
    http = new BootHttp(lab.nodes, { files: { [EFI_PATH]: '/usr/lib/ipxe/snponly.efi' } });
    capture = new DhcpCapture({ netnsPath: lab.topology.path(lab.topology.provisioning), clock: systemClock });
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  after(async () => {
    capture?.close();
    for (const m of machines) m.stop();
    http?.stop();
    await lab?.stop();
  });

  const leaseOf = (mac: string): Promise<string | undefined> => dhcpLeaseOf(lab.admin, lab.namespace, 'dhcp', mac);
  const from = (address: string, path: string) => http.hits.filter((h) => h.path === path && h.from.replace(/^::ffff:/, '') === address);

  it('OVMF HTTP boot (arch 16): offered the URL with option 60 HTTPClient, fetches snponly-x86_64.efi through the VIP, iPXE runs it and fetches boot.ipxe from the VIP', async () => {
    const mac = '52:54:00:40:00:01';
    const tap = 'tap0';
    const startedAt = systemClock.monotonicMs();
    const m = new QemuMachine({
      bridgeNs: lab.topology.provisioning,
      bridge: 'provbr',
      tap,
      mac,
      firmware: 'uefi',
      netBoot: 'http',
      logFile: process.env.IRONET_TEST_LOG ? `/tmp/qemu-${mac.replaceAll(':', '')}.log` : undefined,
    });
    machines.push(m);
    capture!.add(tap);

    const deadline = startedAt + 300_000;
    let ip: string | undefined;
    for (;;) {
      ip = await leaseOf(mac);
      if (ip && from(ip, '/boot.ipxe').length > 0) break;
      if (systemClock.monotonicMs() > deadline) {
        const replies = capture!.replies.filter((r) => r.mac === mac).map((r) => `${r.type} ${r.yiaddr} 60=${r.vendorClass ?? '-'} 67=${r.bootFile ?? '-'}`);
        throw new Error(`${mac} did not fetch /boot.ipxe within 300 s (lease ${ip ?? 'none'}; replies ${replies.join('; ') || 'none'}; HTTP hits ${JSON.stringify(http.hits)}); console:\n${m.tail()}`);
      }
      await systemClock.sleep(250);
    }
    const bootedMs = systemClock.monotonicMs() - startedAt;
    console.log(`      (start → boot.ipxe fetched: ${(bootedMs / 1000).toFixed(1)} s)`);

    // the firmware's DHCP: answered as UEFI HTTP boot requires, from the VIP
    const mine = capture!.replies.filter((r) => r.mac === mac);
    const httpOffer = mine.find((r) => r.type === 'offer' && r.vendorClass === 'HTTPClient');
    expect(httpOffer, `an OFFER with option 60 HTTPClient (replies: ${JSON.stringify(mine)})`).to.not.equal(undefined);
    expect(httpOffer!.bootFile, 'option 67 of that OFFER').to.equal(HTTP_BOOT_URL);
    expect(httpOffer!.serverId).to.equal(VIP);
    expect(httpOffer!.yiaddr).to.equal(ip);
    const httpAck = mine.find((r) => r.type === 'ack' && r.vendorClass === 'HTTPClient');
    expect(httpAck?.bootFile, 'the ACK carries the URL too').to.equal(HTTP_BOOT_URL);
    // then iPXE's own DHCP: the script URL, no HTTPClient; and never a NAK
    expect(mine.some((r) => r.type === 'ack' && r.bootFile === BOOT_SCRIPT_URL && r.vendorClass === undefined), 'an ACK to iPXE with boot.ipxe').to.equal(true);
    expect(mine.filter((r) => r.type === 'nak')).to.deep.equal([]);

    // the EFI program came by HTTP from the machine's leased address, to the VIP, answered by the VIP holder's namespace
    const holder = lab.vip.holders()[0];
    expect(holder, 'a VIP holder').to.not.equal(undefined);
    const efi = from(ip, EFI_PATH);
    expect(efi.map((h) => h.method)).to.include('GET');
    for (const h of [...efi, ...from(ip, '/boot.ipxe')]) {
      expect(h.to?.replace(/^::ffff:/, ''), `${h.method ?? ''} ${h.path} to the VIP`).to.equal(VIP);
      expect(h.node, `${h.path} answered by the holder`).to.equal(lab.nodes[holder!]);
      expect(h.status).to.equal(200);
    }
    const efiGetAt = efi.find((h) => h.method === 'GET')!.atMs;
    expect(from(ip, '/boot.ipxe')[0]!.atMs, 'boot.ipxe after the EFI program').to.be.at.least(efiGetAt);

    // it was HTTP boot, not PXE: OVMF's boot option, and iPXE running
    const screen = m.console.join('\n');
    expect(screen).to.include('UEFI HTTPv4');
    expect(screen).to.not.include('UEFI PXEv4');
    expect(screen).to.match(/iPXE \d/);
    expect(await lab.agents.metrics(holder!)).to.not.match(/ironet_dhcp_packets_total\{[^}]*result="httpBootDisabled"[^}]*\} [1-9]/);
  });
});
