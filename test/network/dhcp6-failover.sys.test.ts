/**
 * DHCPv6 through the agents' VIP election (ADR 0038), in ProvisioningNetwork
 * mode: a dual-stack network (spec.vip.ipv4 + spec.vip.ipv6, spec.dhcpPool +
 * spec.dhcp6Pool), two Ironic pods attached by real Multus, the agents with
 * the chart's RBAC. ISC `dhclient -6` in a host namespace on the provisioning
 * bridge gets an IA_NA from the pod holding the IPv6 VIP, the lease already in
 * the API server when its hook runs; the holder's agent is SIGKILLed, the IPv6
 * VIP moves to the other pod, and the client's RENEW (T1 = 30 s of a 60 s
 * lease) is answered by the new holder with the same address. DHCPv4 beside
 * it still answers udhcpc from the IPv4 VIP's holder. Then the network is
 * made IPv6-only: the IPv4 VIP leaves, DHCPv6 is the network's DHCP, and the
 * client renews again.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { Dhclient6, requireDhclient } from '../support/dhclient6.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { eventually } from '../support/ipam-fixture.js';
import { VIP } from '../support/vip-lab.js';

const VIP6 = 'fd00:22::2';
const CLIENT_MAC = '52:54:00:66:00:01';

describe('DHCPv6 through the VIP election (system): a dual-stack ProvisioningNetwork, dhclient -6 renewing across a SIGKILL of the holder', function () {
  this.timeout(6 * 60_000);
  const world = new IronicPodsLab({
    label: 'dhcp6-failover',
    env: { IRONIC_IP: VIP },
    network: {
      ipv6Cidr: 'fd00:22::/64',
      vip: { ipv4: VIP, ipv6: VIP6 },
      dhcp6Pool: { name: 'dhcp6' },
      // the shortest lease the CRD takes: T1 30 s, T2 48 s
      dhcp: { leaseSeconds: 60 },
    },
    pools: [{ name: 'dhcp6', spec: { namePrefix: 'dhcp6', pools: [{ start: 'fd00:22::100', end: 'fd00:22::1ff' }], prefix: 64 } }],
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-dhcp6-failover-'));
  let client: Dhclient6 | undefined;
  let clientNs: string;

  const holders6 = (): number[] => world.ironic.flatMap((p, i) => (ip('-n', p.netns, '-6', 'addr', 'show', 'dev', 'net1').includes(`${VIP6}/128`) ? [i] : []));

  before(async function () {
    this.timeout(240_000);
    requireDhclient();
    await world.start();
    for (const p of world.ironic) await world.pods.setContainer(p, true, true);
    await eventually(async () => (holders6().length === 1 ? true : undefined), 'one IPv6 VIP holder', 60_000);
    clientNs = world.lab.topology.addClient('dhcp6-host', CLIENT_MAC);
    // no DAD: the client's link-local is usable at once
    ip('netns', 'exec', clientNs, 'sysctl', '-qw', 'net.ipv6.conf.eth0.accept_dad=0');
    ip('-n', clientNs, 'link', 'set', 'eth0', 'down');
    ip('-n', clientNs, 'link', 'set', 'eth0', 'up');
  });

  after(async () => {
    client?.stop();
    await world.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('dhclient -6 is bound from the IPv6 pool by the pod holding the IPv6 VIP, the lease in the API server when its hook runs', async () => {
    const holder = holders6()[0]!;
    // pod i runs on node i: its agent holds the IPv6 VIP's Lease and serves DHCPv6 there
    expect(await world.lab.agents.waitForLog(holder, 'serving DHCPv6', 30_000)).to.contain('"iface":"net1"');
    client = new Dhclient6(clientNs, dir);
    const bound = await client.waitFor(['BOUND6'], 0, 60_000);
    expect(bound.ip).to.match(/^fd00:22::1[0-9a-f]{2}$/);
    expect(await dhcpLeaseOf(world.lab.admin, world.lab.namespace, 'dhcp6', CLIENT_MAC)).to.equal(bound.ip);
    expect(holders6(), 'one holder of the IPv6 VIP').to.deep.equal([holder]);
  });

  it('SIGKILL of the holder’s agent: the IPv6 VIP moves, and the RENEW is answered by the new holder with the same address', async () => {
    const bound = client!.events.find((e) => e.kind === 'BOUND6')!;
    const [holder] = holders6();
    const from = client!.events.length;
    world.lab.agents.signal(holder!, 'SIGKILL');
    const next = await eventually(async () => {
      const h = holders6();
      return h.length === 1 && h[0] !== holder ? h[0] : undefined;
    }, 'the IPv6 VIP on the other pod', 20_000);
    expect(next).to.not.equal(holder);
    // its agent started DHCPv6 as dependent work of its term (it never held before: one holder at a time)
    expect(await world.lab.agents.waitForLog(next, 'serving DHCPv6', 30_000)).to.contain('"iface":"net1"');
    const renewed = await client!.waitFor(['RENEW6', 'REBIND6', 'EXPIRE6', 'FAIL6'], from, 60_000);
    // the same server DUID on every holder: a RENEW, answered before T2
    expect(renewed.kind).to.equal('RENEW6');
    expect(renewed.ip).to.equal(bound.ip);
    expect(await dhcpLeaseOf(world.lab.admin, world.lab.namespace, 'dhcp6', CLIENT_MAC)).to.equal(bound.ip);
  });

  it('DHCPv4 beside it: udhcpc gets an address from the IPv4 pool', async () => {
    const c = new Udhcpc(world.lab.topology.addClient('dhcp4-host', '52:54:00:66:00:02'));
    try {
      const bound = await c.waitFor('bound', 0, 60_000);
      expect(bound.ip).to.match(/^172\.22\.0\.1[5-9]\d$/);
      expect(bound.server, 'from the IPv4 VIP').to.equal(VIP);
      expect(await dhcpLeaseOf(world.lab.admin, world.lab.namespace, 'dhcp', '52:54:00:66:00:02')).to.equal(bound.ip);
    } finally {
      c.stop();
    }
  });

  it('made IPv6-only (spec.vip.ipv4 and spec.dhcpPool removed): the IPv4 VIP leaves, DHCPv6 alone is the network’s DHCP, and the next RENEW keeps the address', async () => {
    const bound = client!.events.find((e) => e.kind === 'BOUND6')!;
    const networks = world.lab.admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
    const patched = await networks.mergePatch({ namespace: world.lab.namespace, name: 'provisioning' }, { spec: { vip: { ipv4: null }, dhcpPool: null } });
    const generation = patched.metadata.generation;
    await eventually(async () => (world.holders().length === 0 ? true : undefined), 'no pod holding the IPv4 VIP', 30_000);
    await eventually(async () => (holders6().length === 1 ? true : undefined), 'one holder of the IPv6 VIP (now on the Lease ironet-vip-provisioning)', 30_000);
    // the primary unit is the IPv6 VIP's: its DHCPv6 start is the DHCPServing the agent reports for this generation
    const serving = await eventually(async () => {
      const c = (await world.network()).status?.conditions?.find((x) => x.type === 'DHCPServing');
      return c?.observedGeneration === generation && c?.status === 'True' ? c : undefined;
    }, 'DHCPServing True for the IPv6-only spec', 30_000);
    expect(serving.reason).to.equal('Serving');
    const from = client!.events.length;
    const renewed = await client!.waitFor(['RENEW6', 'REBIND6', 'EXPIRE6', 'FAIL6'], from, 60_000);
    expect(renewed.kind).to.equal('RENEW6');
    expect(renewed.ip).to.equal(bound.ip);
  });
});
