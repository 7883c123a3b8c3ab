/**
 * Nodes whose provisioning NIC has another name (issue 21 point 5, ADR 0036),
 * end to end on one machine: node-0's NIC is prov0 (spec.attachment.parent),
 * node-1's is renamed ens5 (a parentOverrides entry selecting its Node's label), node-2's override names
 * enp9s0, which it lacks. Each node's agent (the chart's RBAC and
 * capabilities) puts the network's altname on its own NIC (node-1's chosen
 * by its Node's label, node-2's by name); real Multus with
 * the Debian macvlan plugin attaches the Ironic pods of node-0 and node-1 from
 * the one generated NAD, which names that altname; the VIP moves between them
 * on SIGKILL with DHCP (busybox udhcpc) answering from each; node-2 says in
 * its status entry and an Event what is missing and the fix, its pod fails
 * to attach with "Link not found", and its agent keeps running. Deleting the
 * network takes the altnames off.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { parentAltName } from '../../src/network/parent.js';
import { eventually } from '../support/ipam-fixture.js';
import type { IronicPod, IronicPods } from '../../src/lab/world/ironic-pods.js';
import { CniError } from '../../src/lab/rig/cni.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { startProvisioningLab, type ProvisioningLab } from '../support/provisioning-lab.js';
import { VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

interface ParentEntry {
  node: string;
  parent: string;
  source: string;
  altName?: string;
  state: string;
  message: string;
}

describe('per-node parent interfaces: one NAD, NICs named differently on each node (system)', function () {
  this.timeout(6 * 60_000);
  let world: ProvisioningLab;
  let lab: VipWorld;
  let pods: IronicPods;
  const ironic: IronicPod[] = [];
  const clients: Udhcpc[] = [];
  let alt = '';

  const ns = (): string => lab.namespace;
  const admin = (): KubeClient => lab.admin;
  const network = async (): Promise<ProvisioningNetworkObject> => admin().resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: ns(), name: 'provisioning' });
  const entries = async (): Promise<ParentEntry[]> => ((await network()).status as { parentInterfaces?: ParentEntry[] } | undefined)?.parentInterfaces ?? [];
  /** Whether the pod's net1 has the VIP (a pod Multus could not attach has no net1). */
  const holdsVip = (p: IronicPod): boolean => ip('-n', p.netns, '-4', '-o', 'addr', 'show').split('\n').some((l) => / net1 /.test(l) && l.includes(`${VIP}/32`));
  const altNamesOf = (node: string, link: string): string[] => {
    const [l] = JSON.parse(ip('-n', node, '-j', 'link', 'show', 'dev', link)) as { altnames?: string[] }[];
    return l?.altnames ?? [];
  };

  before(async function () {
    this.timeout(240_000);
    world = await startProvisioningLab({
      timings: TIMINGS,
      beforeController: async (l) => {
        // node-1's provisioning NIC has another name than the others'
        ip('-n', l.nodes[1]!, 'link', 'set', 'prov0', 'down');
        ip('-n', l.nodes[1]!, 'link', 'set', 'prov0', 'name', 'ens5');
        ip('-n', l.nodes[1]!, 'link', 'set', 'ens5', 'up');
        // the Node objects kubelet would register; node-1's carries the label its override selects
        for (let i = 0; i < 3; i++) await l.admin.resource(RESOURCES.node).create({ apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${i}`, labels: i === 1 ? { 'ironet.io/provisioning-nic': 'ens5' } : {} } });
      },
    });
    lab = world.lab;
    pods = world.pods;
    await world.createNetwork({
      cidr: '172.22.0.0/24',
      vip: { ipv4: VIP },
      attachment: {
        mode: 'macvlan',
        parent: 'prov0',
        parentOverrides: [
          // node-1 by its Node's label (the agent reads its own Node, the chart's agent-node ClusterRole), node-2 by name
          { nodeSelector: { matchLabels: { 'ironet.io/provisioning-nic': 'ens5' } }, parent: 'ens5' },
          { nodeNames: ['node-2'], parent: 'enp9s0' },
        ],
      },
      podPool: { name: 'ironic-pods' },
      dhcpPool: { name: 'dhcp' },
      dhcp: { knownHostsOnly: false },
      ironicPodSelector: { matchLabels: { app: 'ironic' } },
      election: TIMINGS,
    });
    alt = parentAltName({ namespace: ns(), name: 'provisioning' });
  });

  after(async () => {
    for (const c of clients) c.stop();
    await world?.stop();
  });

  it('the NAD names the network\'s altname; each agent puts it on its own node\'s NIC and says so per node; node-2 says its NIC is missing, and the fix', async () => {
    const nad = await admin().resource<KubeObject & { spec?: { config?: string } }>(RESOURCES.networkAttachmentDefinition).get({ namespace: ns(), name: 'provisioning' });
    expect((JSON.parse(nad.spec!.config!) as { plugins: { master?: string }[] }).plugins[0]!.master).to.equal(alt);
    for (let i = 0; i < 3; i++) lab.startAgent(i, [], 'networks');
    const all = await eventually(async () => {
      const e = await entries();
      return e.length === 3 ? e : undefined;
    }, 'a parentInterfaces entry from each node', 60_000);
    const byNode = new Map(all.map((e) => [e.node, e]));
    expect(byNode.get('node-0')).to.deep.include({ parent: 'prov0', source: 'spec.attachment.parent', altName: alt, state: 'Ready' });
    expect(byNode.get('node-1')).to.deep.include({ parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', altName: alt, state: 'Ready' });
    expect(byNode.get('node-2')).to.deep.include({ parent: 'enp9s0', source: 'spec.attachment.parentOverrides[1]', state: 'Missing' });
    expect(byNode.get('node-2')!.message).to.equal('spec.attachment.parentOverrides[1] names enp9s0 for node node-2, and no such interface exists there: Ironic pods on it cannot attach; write that node\'s NIC (or bridge) name in spec.attachment.parentOverrides[1].parent');
    // in the nodes' own namespaces, as `ip link` shows it
    expect(altNamesOf(lab.nodes[0]!, 'prov0')).to.deep.equal([alt]);
    expect(altNamesOf(lab.nodes[1]!, 'ens5')).to.deep.equal([alt]);
    expect(altNamesOf(lab.nodes[2]!, 'prov0')).to.deep.equal([]);
    const events = await eventually(async () => {
      const list = (await admin().resource<EventObject>(RESOURCES.event).list(ns())).items.filter((e) => e.regarding.name === 'provisioning' && e.reason === 'ParentInterfaceMissing');
      return list.length > 0 ? list : undefined;
    }, 'node-2\'s ParentInterfaceMissing Event', 30_000);
    expect(events.map((e) => e.note)).to.deep.equal([byNode.get('node-2')!.message]);
  });

  it('real Multus attaches node-0\'s and node-1\'s Ironic pods through the altname; node-2\'s fails with Link not found and its agent runs on', async () => {
    ironic.push(...(await world.podOnEachNode()));
    await pods.attach(ironic[0]!);
    await pods.attach(ironic[1]!);
    const err = await pods.attach(ironic[2]!).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(CniError);
    expect((err as Error).message).to.contain('Link not found');
    // the macvlan interfaces sit on each node's own NIC
    expect(ip('-n', ironic[0]!.netns, '-d', 'link', 'show', 'net1')).to.contain('macvlan');
    for (const p of ironic.slice(0, 2)) await pods.setReady(p);
    const addresses = await eventually(async () => {
      const a = ironic.slice(0, 2).map((p) => ip('-n', p.netns, '-4', '-o', 'addr', 'show', 'dev', 'net1'));
      return a.every((x) => /172\.22\.0\.[3-9]\/24/.test(x)) ? a : undefined;
    }, 'both attached pods plumbed', 60_000);
    expect(addresses).to.have.length(2);
    await eventually(async () => (ironic.slice(0, 2).filter(holdsVip).length === 1 ? true : undefined), 'one VIP holder among node-0 and node-1', 30_000);
    expect(ip('-n', ironic[2]!.netns, '-o', 'link', 'show'), 'no half-made interface on node-2\'s pod').to.not.contain('net1');
    expect(lab.agents.state(2), 'node-2\'s agent runs on').to.equal('running');
  });

  it('the VIP moves between the two differently named NICs on SIGKILL, and DHCP answers from each holder', async () => {
    const holder = ironic.findIndex(holdsVip);
    expect(holder).to.be.oneOf([0, 1]);
    const c1 = new Udhcpc(lab.topology.addClient('parent-c1', '52:54:00:61:00:01'));
    clients.push(c1);
    const bound1 = await c1.waitFor('bound', 0, 30_000);
    expect(bound1.server).to.equal(VIP);
    const killedAt = systemClock.monotonicMs();
    lab.agents.signal(holder, 'SIGKILL');
    const next = await lab.vip.nextHolder(killedAt, 15_000, holder);
    expect(next?.node, 'the other NIC\'s pod took the VIP').to.equal(1 - holder);
    expect(lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
    const c2 = new Udhcpc(lab.topology.addClient('parent-c2', '52:54:00:61:00:02'));
    clients.push(c2);
    const bound2 = await c2.waitFor('bound', 0, 30_000);
    expect(bound2.server).to.equal(VIP);
    expect(bound2.ip).to.not.equal(bound1.ip);
    const pn = await eventually(async () => {
      const got = await network();
      return got.status?.vipHolder?.node === `node-${1 - holder}` ? got : undefined;
    }, 'the status names the new holder', 15_000);
    expect(pn.status?.vipHolder?.pod).to.equal(`ironic-${1 - holder}`);
  });

  it('deleting the network takes its altname off the live nodes\' NICs', async () => {
    const live = ironic.findIndex(holdsVip);
    await admin().resource(RESOURCES.provisioningNetwork).delete({ namespace: ns(), name: 'provisioning' });
    const nic = live === 1 ? 'ens5' : 'prov0';
    await eventually(async () => (altNamesOf(lab.nodes[live]!, nic).length === 0 ? true : undefined), `the altname off node-${live}'s ${nic}`, 30_000);
  });
});
