/**
 * IPv6 PXE end to end (issue 21 point 3, ADR 0037): the agents hold an IPv6
 * VIP (fd00:6::2/64) by the Lease election and, as its holder, serve Router
 * Advertisements (M=1), DHCPv6 from an IPv6 IPPool in the real API server,
 * and TFTP on the IPv6 VIP; Ironic's httpd stand-in answers on [VIP6]:6180.
 * - UEFI: OVMF with IPv4 PXE off and IPv6 PXE on ("UEFI PXEv6") takes the RA,
 *   does DHCPv6 (IA_NA, option 59 = tftp://[VIP6]/snponly-x86_64.efi),
 *   fetches iPXE over TFTP from the VIP, and iPXE does DHCPv6 again and
 *   fetches http://[VIP6]:6180/boot.ipxe.
 * - BIOS: SeaBIOS with QEMU's iPXE ROM (Debian's ipxe-qemu, IPv6 built in)
 *   does DHCPv6 itself and fetches boot.ipxe from the VIP.
 * Each passes only when the address durable in the API server for the
 * machine's MAC is the one that fetched from the VIP.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { QemuMachine, requirePxeTools, tftpRoot, type QemuOptions } from '../../src/lab/rig/qemu.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { startVipLab } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const VIP6 = 'fd00:6::2';
const EFI_FILE = 'snponly-x86_64.efi';

/** An IPv6 address as EDK2 prints it: eight groups, no compression, capitals (FD00:6:0:0:0:0:0:100). */
function expandedUpper(address: string): string {
  const [head, tail = ''] = address.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.map((g) => g.replace(/^0+(?=.)/, '').toUpperCase()).join(':');
}

describe('IPv6 PXE (system, QEMU): RA, DHCPv6 and TFTP from the IPv6 VIP holder, boot.ipxe on [VIP6]', function () {
  this.timeout(10 * 60_000);
  let lab: VipWorld;
  let http: BootHttp;
  const machines: QemuMachine[] = [];
  let holder: number;

  before(async function () {
    this.timeout(120_000);
    requirePxeTools();
    lab = await startVipLab({
      timings: TIMINGS,
      vip: { address: VIP6, prefix: 64 }, // on-link: the holder reaches the clients' DHCPv6 addresses
      dhcp: {
        family: 6,
        pool: { namePrefix: 'dhcp', pools: [{ start: 'fd00:6::100', end: 'fd00:6::1ff' }], prefix: 64, preAllocations: { 'reserved-vip': VIP6 } },
        agentArgs: ['--tftp-root', tftpRoot()],
      },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    http = new BootHttp(lab.nodes, { host: '::' });
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    const first = await lab.vip.nextHolder(0, 20_000);
    expect(first, 'a node holds the IPv6 VIP').to.not.equal(undefined);
    holder = first!.node;
    await lab.agents.waitForLog(holder, 'sending Router Advertisements', 20_000);
  });
  after(async () => {
    for (const m of machines) m.stop();
    http?.stop();
    await lab?.stop();
  });

  const leaseOf = (mac: string): Promise<string | undefined> => dhcpLeaseOf(lab.admin, lab.namespace, 'dhcp', mac);
  const hitsFrom = (address: string, path: string) => http.hits.filter((h) => h.path === path && h.from === address);

  function boot(mac: string, firmware: QemuOptions['firmware'], netBoot?: QemuOptions['netBoot']): QemuMachine {
    const m = new QemuMachine({
      bridgeNs: lab.topology.provisioning,
      bridge: 'provbr',
      tap: `tap${machines.length}`,
      mac,
      firmware,
      ...(netBoot ? { netBoot } : {}),
      logFile: process.env.IRONET_TEST_LOG ? `/tmp/qemu-${mac.replaceAll(':', '')}.log` : undefined,
    });
    machines.push(m);
    return m;
  }

  /** Waits until the address leased to `mac` in the API server fetched /boot.ipxe; that address and the time it took. */
  async function reachedBootScript(m: QemuMachine, mac: string, timeoutMs: number): Promise<{ ip: string; tookMs: number }> {
    const startedAt = systemClock.monotonicMs();
    for (;;) {
      const ip = await leaseOf(mac);
      // the fetch, and iPXE printing the script it ran (its console may trail the HTTP server's log by a moment)
      if (ip && hitsFrom(ip, '/boot.ipxe').length > 0 && m.console.some((l) => l.includes('ironet boot.ipxe reached'))) return { ip, tookMs: systemClock.monotonicMs() - startedAt };
      if (systemClock.monotonicMs() - startedAt > timeoutMs) {
        throw new Error(`${mac} did not fetch /boot.ipxe within ${timeoutMs} ms (lease ${ip ?? 'none'}; HTTP hits ${JSON.stringify(http.hits)}); console:\n${m.tail(30)}`);
      }
      await systemClock.sleep(250);
    }
  }

  /** Every request went to [VIP6]:6180, was answered by the holder's namespace, and succeeded. */
  function expectFromVip(ip: string, path: string): void {
    const hits = hitsFrom(ip, path);
    expect(hits, `${path} from ${ip}`).to.not.be.empty;
    for (const h of hits) {
      expect(h.to, `${path} to the VIP`).to.equal(VIP6);
      expect(h.node, `${path} answered by the holder`).to.equal(lab.nodes[holder]);
      expect(h.status).to.equal(200);
    }
  }

  interface Logged {
    readonly msg: string;
    readonly mac?: string;
    readonly ip?: string;
    readonly lease?: string;
  }
  /** The holder's log lines containing `text`, parsed. */
  const holderLogged = (text: string): Logged[] => lab.agents.logged(holder, text).map((l) => JSON.parse(l) as Logged);
  /** The DHCPv6 bindings the holder made for `mac`: address and DUID (hex). */
  const bindingsOf = (mac: string) => holderLogged('"DHCPv6 binding"').filter((b) => b.mac === mac);

  /** iPXE configured the leased address with the RA's /64 and took option 59's URL. */
  function expectIpxeOnIpv6(screen: string, ip: string): void {
    expect(screen).to.match(/iPXE \d/);
    expect(screen).to.include(`net0: ${ip}/64`);
    expect(screen).to.include(`Filename: http://[${VIP6}]:6180/boot.ipxe`);
    expect(screen).to.include('ironet boot.ipxe reached');
  }

  it('UEFI (OVMF "UEFI PXEv6"): DHCPv6 gives tftp://[VIP6]/snponly-x86_64.efi, TFTP over IPv6 from the VIP, iPXE does DHCPv6 again and fetches boot.ipxe from [VIP6]', async () => {
    const mac = '52:54:00:60:00:01';
    const m = boot(mac, 'uefi', 'pxe6');
    const { ip, tookMs } = await reachedBootScript(m, mac, 300_000);
    console.log(`      (start → boot.ipxe fetched: ${(tookMs / 1000).toFixed(1)} s)`);
    expect(ip).to.match(/^fd00:6::1[0-9a-f]{2}$/);
    expectFromVip(ip, '/boot.ipxe');
    // two DHCPv6 clients on one machine — EDK2 (DUID-LLT) and then iPXE (DUID-UUID) — both bound to this MAC's one address
    const bindings = bindingsOf(mac);
    expect(bindings.map((b) => b.lease!.slice(0, 4)), JSON.stringify(bindings)).to.include.members(['0001', '0004']);
    expect(new Set(bindings.map((b) => b.ip)), 'one address from firmware to iPXE').to.deep.equal(new Set([ip]));
    // EDK2 releases it when iPXE takes the NIC over; the same address is given back (ADR 0037)
    expect(holderLogged('"DHCPv6 address released"').filter((r) => r.mac === mac).map((r) => r.ip)).to.deep.equal([ip]);
    // the EFI program went by TFTP from the IPv6 VIP to that address, and iPXE ran it
    const sent = holderLogged(`"sent ${EFI_FILE}`);
    expect(sent.map((t) => t.ip), 'TFTP transfers to the leased address').to.include(ip);
    // what EDK2 and then iPXE said on the console (EDK2 prints addresses uncompressed, in capitals)
    const screen = m.console.join('\n');
    expect(screen).to.include('Start PXE over IPv6');
    expect(screen).to.include(`Station IP address is ${expandedUpper(ip)}`);
    expect(screen).to.include(`Server IP address is ${expandedUpper(VIP6)}`);
    expect(screen).to.include(`NBP filename is ${EFI_FILE}`);
    expect(screen).to.include('NBP file downloaded successfully');
    expect(screen).to.include('UEFI PXEv6');
    expect(screen).to.not.include('UEFI PXEv4');
    expectIpxeOnIpv6(screen, ip);
  });

  it('BIOS (SeaBIOS + iPXE ROM): iPXE takes the RA, does DHCPv6 and fetches boot.ipxe from [VIP6]', async () => {
    const mac = '52:54:00:60:00:02';
    const m = boot(mac, 'bios');
    const { ip, tookMs } = await reachedBootScript(m, mac, 180_000);
    console.log(`      (start → boot.ipxe fetched: ${(tookMs / 1000).toFixed(1)} s)`);
    expect(ip).to.match(/^fd00:6::1[0-9a-f]{2}$/);
    expectFromVip(ip, '/boot.ipxe');
    // iPXE itself asked (DUID-UUID, user class iPXE → the script URL): no TFTP for this machine
    expect(bindingsOf(mac).map((b) => [b.lease!.slice(0, 4), b.ip])).to.deep.equal([['0004', ip]]);
    expect(holderLogged(`"sent ${EFI_FILE}`).map((t) => t.ip)).to.not.include(ip);
    expectIpxeOnIpv6(m.console.join('\n'), ip);
  });
});
