/**
 * Ironic without hostNetwork, end to end on one machine: three "nodes", each
 * with an "Ironic pod" that real Multus attaches to the provisioning network
 * from the NAD the controller generated; agents in ProvisioningNetwork mode
 * (chart RBAC) plumb each pod's interface with its IPAM address and hold the
 * VIP in exactly one pod; a QEMU iPXE client DHCPs from that pod and fetches
 * boot.ipxe from an HTTP server inside it; SIGKILL of that node's agent moves
 * the VIP, DHCP and the next PXE boot to another pod, never two holders.
 */
import { expect } from 'chai';
import { checkMetrics } from '../support/promtool.js';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { eventually } from '../support/ipam-fixture.js';
import type { IronicPod, IronicPods } from '../../src/lab/world/ironic-pods.js';
import { CniError } from '../../src/lab/rig/cni.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { QemuMachine, requirePxeTools } from '../../src/lab/rig/qemu.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startProvisioningLab, type ProvisioningLab } from '../support/provisioning-lab.js';
import { VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
/** The network is dual-stack: its IPv6 VIP is elected on its own Lease (ironet-vip6-provisioning). */
const VIP6 = 'fd00:22::2';

describe('ProvisioningNetwork end to end: Multus-attached Ironic pods, VIP and PXE (system)', function () {
  this.timeout(10 * 60_000);
  let world: ProvisioningLab;
  let lab: VipWorld;
  let pods: IronicPods;
  let http: BootHttp;
  let ironic: IronicPod[] = [];
  const machines: QemuMachine[] = [];
  let taps = 0;

  const ns = (): string => lab.namespace;
  const admin = (): KubeClient => lab.admin;
  const network = async (): Promise<ProvisioningNetworkObject> => admin().resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: ns(), name: 'provisioning' });
  /** The IPv4 addresses on net1 in a pod's namespace (none when Multus has not attached it yet). */
  const addressesIn = (netns: string): string[] => {
    const links = JSON.parse(ip('-n', netns, '-j', '-4', 'addr', 'show')) as { ifname: string; addr_info: { local: string; prefixlen: number }[] }[];
    return links.filter((l) => l.ifname === 'net1').flatMap((l) => l.addr_info.map((a) => `${a.local}/${a.prefixlen}`));
  };
  const holders = (): number[] => ironic.flatMap((p, i) => (addressesIn(p.netns).includes(`${VIP}/32`) ? [i] : []));
  const holders6 = (): number[] => ironic.flatMap((p, i) => (ip('-n', p.netns, '-6', 'addr', 'show', 'dev', 'net1').includes(`${VIP6}/128`) ? [i] : []));

  before(async function () {
    this.timeout(240_000);
    requirePxeTools();
    world = await startProvisioningLab({ timings: TIMINGS });
    lab = world.lab;
    pods = world.pods;
    await world.createNetwork({
      cidr: '172.22.0.0/24',
      ipv6Cidr: 'fd00:22::/64',
      vip: { ipv4: VIP, ipv6: VIP6 },
      attachment: { mode: 'macvlan', parent: 'prov0' },
      podPool: { name: 'ironic-pods' },
      dhcpPool: { name: 'dhcp' },
      ironicPodSelector: { matchLabels: { app: 'ironic' } },
      routes: [{ destination: '172.23.0.0/24', gateway: '172.22.0.100' }],
      election: TIMINGS,
      // UEFI HTTP boot (ADR 0033): iPXE's EFI program from the Ironic pods' HTTP server on the VIP
      dhcp: { httpBootUrl: `http://${VIP}:6180/snponly-x86_64.efi` },
    });
    ironic = await world.podOnEachNode();
    http = new BootHttp(ironic.map((p) => p.netns), { files: { '/snponly-x86_64.efi': '/usr/lib/ipxe/snponly.efi' } });
  });

  after(async () => {
    for (const m of machines) m.stop();
    http?.stop();
    await world?.stop();
  });

  it('a pod without Multus\' network-status is not plumbed: the agent waits, says why, and after its grace records a Warning Event', async () => {
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i, ['--attach-grace-seconds', '3'], 'networks');
    const line = await lab.agents.waitForLog(0, 'waiting to plumb the Ironic pod', 30_000);
    expect(line).to.contain('network-status');
    expect(addressesIn(ironic[0]!.netns).length, 'no interface yet').to.equal(0);
    const events = await eventually(async () => {
      const list = (await admin().resource<EventObject>(RESOURCES.event).list(ns())).items.filter((e) => e.regarding.name === 'provisioning' && e.reason === 'NoNetworkStatus');
      return list.length >= 3 ? list : undefined;
    }, 'a NoNetworkStatus event from each node', 30_000);
    for (const e of events) expect(e.note).to.match(/^pod ironic-\d on node node-\d: the pod has no k8s\.v1\.cni\.cncf\.io\/network-status annotation/);
  }).timeout(60_000);

  it('Multus attaches net1 from the generated NAD; each agent plumbs its pod with an IPAM address; one pod holds the VIP', async () => {
    for (const p of ironic) await pods.attach(p);
    for (const p of ironic) expect(await pods.networkStatus(p)).to.contain(`"${ns()}/provisioning"`);
    const addresses = await eventually(async () => {
      const all = ironic.map((p) => addressesIn(p.netns).filter((a) => a !== `${VIP}/32`));
      return all.every((a) => a.length === 1) ? all.map((a) => a[0]!) : undefined;
    }, 'every pod interface plumbed', 60_000);
    expect(new Set(addresses).size).to.equal(3);
    for (const a of addresses) expect(a).to.match(/^172\.22\.0\.[3-9]\/24$/);
    // the network's routes, through the provisioning interface
    for (const p of ironic) expect(ip('-n', p.netns, 'route', 'show', '172.23.0.0/24')).to.contain('172.23.0.0/24 via 172.22.0.100 dev net1');
    // the VIP is reserved in the pod pool: no pod got it
    const pool = await admin().resource(RESOURCES.ipPool).get({ namespace: ns(), name: 'ironic-pods' });
    expect((pool as { spec?: { preAllocations?: Record<string, string> } }).spec?.preAllocations).to.deep.equal({ 'reserved-vip-provisioning': VIP });
    expect(holders(), 'no holder before the pods are Ready').to.deep.equal([]);

    for (const p of ironic) await pods.setReady(p);
    const first = await eventually(async () => (holders().length === 1 ? holders() : undefined), 'one VIP holder', 30_000);
    let last: unknown;
    const pn = await eventually(async () => {
      const got = await network();
      last = got.status;
      return got.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? got : undefined;
    }, 'the network Ready', 60_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last status ${JSON.stringify(last)}`);
    });
    expect(pn.status?.vipHolder?.pod).to.equal(ironic[first[0]!]!.name);
    expect(pn.status?.vipHolder?.node).to.equal(`node-${first[0]}`);
    expect(lab.vip.dualHolderMs()).to.equal(0);
    // the IPv6 VIP: one holder too, on its own Lease
    await eventually(async () => (holders6().length === 1 ? true : undefined), 'one IPv6 VIP holder', 30_000);
  });

  async function bootsThrough(mac: string, holderNs: string): Promise<string> {
    const m = new QemuMachine({ bridgeNs: lab.topology.provisioning, bridge: 'provbr', tap: `tap${taps++}`, mac, firmware: 'bios' });
    machines.push(m);
    const deadline = systemClock.monotonicMs() + 150_000;
    for (;;) {
      const lease = await dhcpLeaseOf(admin(), ns(), 'dhcp', mac);
      const hit = lease ? http.hits.find((h) => h.path === '/boot.ipxe' && h.from.replace(/^::ffff:/, '') === lease) : undefined;
      if (hit) {
        expect(hit.node, 'boot.ipxe served from the VIP-holding pod').to.equal(holderNs);
        m.stop();
        return lease!;
      }
      if (systemClock.monotonicMs() > deadline) throw new Error(`${mac} did not reach boot.ipxe (lease ${lease ?? 'none'}; hits ${JSON.stringify(http.hits)}); console:\n${m.tail()}`);
      await systemClock.sleep(250);
    }
  }

  it('a QEMU iPXE client DHCPs from the VIP-holding pod and fetches boot.ipxe from it; SIGKILL moves VIP, DHCP and the next boot to another pod', async () => {
    const [holder] = holders();
    expect(holder).to.not.equal(undefined);
    const lease1 = await bootsThrough('52:54:00:60:00:01', ironic[holder!]!.netns);
    expect(lease1).to.match(/^172\.22\.0\.1[5-9]\d$/);

    const killedAt = systemClock.monotonicMs();
    lab.agents.signal(holder!, 'SIGKILL');
    const next = await lab.vip.nextHolder(killedAt, 15_000, holder);
    expect(next, 'another pod took the VIP').to.not.equal(undefined);
    expect(lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
    await eventually(async () => (holders().length === 1 && holders()[0] !== holder ? true : undefined), 'the killed node\'s pod lost the VIP (kernel lifetime)', 10_000);
    await eventually(async () => (holders6().length === 1 && !holders6().includes(holder!) ? true : undefined), 'the IPv6 VIP on one live pod', 15_000);
    const lease2 = await bootsThrough('52:54:00:60:00:02', ironic[next!.node]!.netns);
    expect(lease2).to.not.equal(lease1);
    // the holder's live /metrics (VIP, DHCP, TFTP, API requests, process) passes Prometheus' own lint
    const scrape = await lab.agents.metrics(next!.node);
    expect(scrape).to.match(/^ironet_vip_owned\{vip="172\.22\.0\.2"\} 1$/m).and.match(/^ironet_dhcp_packets_total\{/m);
    const lint = await checkMetrics(scrape);
    expect(lint.output.trim(), 'promtool check metrics findings').to.equal('');
    expect(lint.code).to.equal(0);
    const pn = await eventually(async () => {
      const got = await network();
      return got.status?.vipHolder?.pod === ironic[next!.node]!.name ? got : undefined;
    }, 'the status names the new holder', 15_000);
    expect(pn.status?.vipHolder?.node).to.equal(`node-${next!.node}`);
    expect(lab.vip.dualHolderMs()).to.equal(0);
    // the counts (written at most every 10 s): three plumbed pods, the two PXE clients' leases
    const counted = await eventually(async () => {
      const got = await network();
      return got.status?.attachedPods === 3 && got.status.leases === 2 ? got : undefined;
    }, 'attachedPods 3 and leases 2 on the status', 30_000);
    expect(counted.status?.networkAttachmentDefinition).to.equal('provisioning');
  });

  it('spec.dhcp.httpBootUrl: a UEFI HTTP boot machine (OVMF, arch 16) fetches the EFI program and then boot.ipxe from the VIP-holding pod', async () => {
    const [holder] = holders();
    expect(holder).to.not.equal(undefined);
    const mac = '52:54:00:60:00:16';
    const m = new QemuMachine({ bridgeNs: lab.topology.provisioning, bridge: 'provbr', tap: `tap${taps++}`, mac, firmware: 'uefi', netBoot: 'http' });
    machines.push(m);
    const lease = await eventually(async () => {
      const ip = await dhcpLeaseOf(admin(), ns(), 'dhcp', mac);
      return ip && http.hitFrom(ip, '/boot.ipxe') ? ip : undefined;
    }, 'the HTTP boot machine fetched boot.ipxe', 240_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message} (hits ${JSON.stringify(http.hits)}); console:\n${m.tail()}`);
    });
    const efi = http.hitFrom(lease, '/snponly-x86_64.efi');
    expect(efi, 'the EFI program fetched by HTTP from its lease address').to.not.equal(undefined);
    expect([efi!.node, efi!.to?.replace(/^::ffff:/, ''), efi!.status]).to.deep.equal([ironic[holder!]!.netns, VIP, 200]);
    expect(http.hitFrom(lease, '/boot.ipxe')!.node).to.equal(ironic[holder!]!.netns);
    expect(m.console.join('\n')).to.include('UEFI HTTPv4');
    m.stop();
  });

  it('an unknown parent interface fails the pod\'s attachment cleanly: an error naming it, no half-made interface', async () => {
    await admin().resource(RESOURCES.ipPool).create({ metadata: { name: 'other-pods', namespace: ns() }, spec: { namePrefix: 'other-pods', pools: [{ start: '172.23.0.10', end: '172.23.0.19' }], prefix: 24 } } as KubeObject);
    await admin().resource(RESOURCES.provisioningNetwork).create({
      metadata: { name: 'elsewhere', namespace: ns() },
      spec: {
        cidr: '172.23.0.0/24', vip: { ipv4: '172.23.0.2' }, attachment: { parent: 'nosuch0' }, podPool: { name: 'other-pods' },
        dhcp: { enabled: false }, ironicPodSelector: { matchLabels: { app: 'other' } },
      },
    } as KubeObject);
    await eventually(() => admin().resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: ns(), name: 'elsewhere' }), 'the second NAD', 30_000);
    const pod = await pods.create('other-0', { index: 0, netns: lab.nodes[0]! }, 'elsewhere', { app: 'other' });
    const err = await pods.attach(pod).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(CniError);
    expect((err as Error).message).to.contain('Link not found');
    // Multus cannot name the interface; the agents on the nodes can, on the ProvisioningNetwork
    const events = await eventually(async () => {
      const list = (await admin().resource<EventObject>(RESOURCES.event).list(ns())).items.filter((e) => e.regarding.name === 'elsewhere' && e.reason === 'ParentInterfaceMissing');
      // one per live agent (the previous test SIGKILLed one)
      return list.length >= 2 ? list : undefined;
    }, 'a ParentInterfaceMissing event from each live node', 30_000);
    for (const e of events) expect(e.note).to.match(/^spec\.attachment\.parent names nosuch0 for node node-\d, and no such interface exists there: Ironic pods on it cannot attach/);
    // and each node's entry on the network's status says the same
    const entries = (await admin().resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: ns(), name: 'elsewhere' })).status?.parentInterfaces ?? [];
    expect(entries.filter((e) => e.state === 'Missing' && e.parent === 'nosuch0').length).to.be.at.least(2);
    expect(new Set(events.map((e) => e.reportingInstance)).size).to.equal(events.length);
    expect(ip('-n', pod.netns, '-o', 'link', 'show')).to.not.contain('net1');
    // the agents keep serving the first network
    expect(holders().length).to.equal(1);
  });
});
