/**
 * ProxyDHCP in ProvisioningNetwork mode (system, QEMU): the network switched
 * to `spec.dhcp.mode: proxy` (its dhcpPool removed), a real dnsmasq on the
 * provisioning bridge handing out addresses only, the Ironic pods behind
 * Multus; the VIP-holding pod's agent answers PXE clients with boot files
 * only. A BIOS machine must fetch boot.ipxe from the holder pod, from the
 * address dnsmasq leased it; the network says DHCP is served.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { Dnsmasq } from '../../src/lab/rig/dnsmasq.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools } from '../../src/lab/rig/qemu.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

const SITE_DHCP = '172.22.0.240';

describe('ProxyDHCP from the VIP-holding Ironic pod beside a site DHCP server (system, ProvisioningNetwork mode)', function () {
  this.timeout(6 * 60_000);
  const world = new IronicPodsLab({ env: { IRONIC_IP: VIP }, label: 'proxy-dhcp' });
  let dnsmasq: Dnsmasq | undefined;
  let http: BootHttp | undefined;
  const machines: QemuMachine[] = [];

  before(async function () {
    this.timeout(240_000);
    requirePxeTools();
    await world.start();
    for (const p of world.ironic) await world.pods.setContainer(p, true, true);
    // proxy mode: no pool (a pool given would be refused)
    await world.lab.admin.resource(RESOURCES.provisioningNetwork).mergePatch({ namespace: world.lab.namespace, name: 'provisioning' }, { spec: { dhcpPool: null, dhcp: { mode: 'proxy' } } });
    await eventually(async () => ((await world.network()).status?.conditions?.find((c) => c.type === 'DHCPServing')?.status === 'True' ? true : undefined), 'DHCPServing True in proxy mode', 60_000);
    const ns = world.lab.topology.addClient('site-dhcp', '52:54:00:ee:00:03');
    ip('-n', ns, 'addr', 'add', `${SITE_DHCP}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    dnsmasq = new Dnsmasq({ netns: ns, iface: 'eth0', range: '172.22.0.200,172.22.0.230,255.255.255.0,10m' });
    dnsmasq.start();
    http = new BootHttp(world.ironic.map((p) => p.netns));
  });
  after(async () => {
    for (const m of machines) m.stop();
    http?.stop();
    await dnsmasq?.close();
    await world.stop();
  });

  it('a BIOS machine gets its address from dnsmasq and boot.ipxe from the holder pod; the network is Ready and serving', async () => {
    // Ready follows the holder's DHCP report by a reconcile: wait for it
    const ready = await eventually(async () => {
      const conditions = (await world.network()).status?.conditions;
      return conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? conditions : undefined;
    }, 'the network Ready', 30_000).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify((await world.network()).status?.conditions)}`);
    });
    expect(ready.find((c) => c.type === 'DHCPServing')?.reason).to.equal('ProxyServing');
    const mac = '52:54:00:61:00:01';
    const m = new QemuMachine({ bridgeNs: world.lab.topology.provisioning, bridge: 'provbr', tap: 'tap0', mac, firmware: 'bios' });
    machines.push(m);
    const deadline = systemClock.monotonicMs() + 120_000;
    for (;;) {
      const leased = dnsmasq!.leases().get(mac);
      const hit = leased ? http!.hitFrom(leased) : undefined;
      if (hit) {
        expect(leased).to.match(/^172\.22\.0\.2[0-3]\d$/);
        expect(world.holders().map((i) => world.ironic[i]!.netns), 'the holder pod answered').to.include(hit.node);
        return;
      }
      if (systemClock.monotonicMs() > deadline) throw new Error(`${mac} did not fetch /boot.ipxe (dnsmasq lease ${leased ?? 'none'}; hits ${JSON.stringify(http!.hits)}); console:\n${m.tail()}`);
      await systemClock.sleep(250);
    }
  });
});
