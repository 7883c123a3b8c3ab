/**
 * Another DHCP server on the provisioning network (issue 19, point 2): a real
 * dnsmasq beside the Ironic pods' agents. A client choosing dnsmasq's offer
 * (its broadcast REQUEST names dnsmasq) is noticed by the VIP holder; a client
 * asking for broadcast replies (udhcpc -B) makes every agent hear dnsmasq's
 * OFFER and ACK.
 * Said as one Warning Event ForeignDHCPServer naming the server and counted by
 * server in ironet_dhcp_foreign_server_replies_total on every agent.
 */
import { expect } from 'chai';
import { RESOURCES } from '../../src/kube/resources.js';
import { Dnsmasq } from '../../src/lab/rig/dnsmasq.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

const DNSMASQ = '172.22.0.240';

describe('another DHCP server on the provisioning network is found and said (system)', function () {
  this.timeout(5 * 60_000);
  const world = new IronicPodsLab({ env: { IRONIC_IP: VIP }, label: 'foreign-dhcp' });
  let dnsmasq: Dnsmasq | undefined;
  const clients: Udhcpc[] = [];

  before(async function () {
    this.timeout(240_000);
    await world.start();
    for (const p of world.ironic) await world.pods.setContainer(p, true, true);
    // ironet answers only the hosts it knows, so the test's clients are dnsmasq's
    await world.lab.admin.resource(RESOURCES.provisioningNetwork).mergePatch({ namespace: world.lab.namespace, name: 'provisioning' }, { spec: { dhcp: { knownHostsOnly: true } } });
    await eventually(async () => ((await world.network()).status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'Ready' ? true : undefined), 'the network Ready', 60_000);
    const ns = world.lab.topology.addClient('dnsmasq', '52:54:00:ee:00:01');
    ip('-n', ns, 'addr', 'add', `${DNSMASQ}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    dnsmasq = new Dnsmasq({ netns: ns, iface: 'eth0', range: '172.22.0.200,172.22.0.210,255.255.255.0,5m' });
    dnsmasq.start();
  });
  after(async () => {
    for (const c of clients) c.stop();
    await dnsmasq?.close();
    await world.stop();
  });

  async function counted(i: number): Promise<number> {
    const text = await world.lab.agents.metrics(i);
    return text
      .split('\n')
      .filter((l) => l.startsWith(`ironet_dhcp_foreign_server_replies_total{server="${DNSMASQ}"}`))
      .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
  }

  it('a client taking dnsmasq\'s offer, then one asking for broadcast replies: one Warning Event naming dnsmasq, counted on every agent', async () => {
    const c = new Udhcpc(world.lab.topology.addClient('udhcpc-foreign', '52:54:00:ee:00:02'));
    clients.push(c);
    const bound = await c.waitFor('bound', 0, 60_000);
    expect(bound.server, 'the client took dnsmasq\'s address').to.equal(DNSMASQ);
    const events = await eventually(async () => {
      const list = await world.events('ForeignDHCPServer');
      return list.length > 0 ? list : undefined;
    }, 'a ForeignDHCPServer Event', 30_000);
    expect(events[0]!.type).to.equal('Warning');
    expect(events[0]!.note).to.match(new RegExp(`^DHCP server ${DNSMASQ.replace(/\./g, '\\.')} .*on the provisioning network, beside ironet's DHCP on ${VIP.replace(/\./g, '\\.')}: .*remove it`));
    // broadcast replies (udhcpc -B, as UEFI firmware asks): every agent hears dnsmasq answer, holder or not
    const b = new Udhcpc(world.lab.topology.addClient('udhcpc-broadcast', '52:54:00:ee:00:03'), ['-B']);
    clients.push(b);
    expect((await b.waitFor('bound', 0, 60_000)).server).to.equal(DNSMASQ);
    const holder = world.holders()[0]!;
    for (const i of [0, 1]) await eventually(async () => ((await counted(i)) > 0 ? true : undefined), `agent ${i} (${i === holder ? 'holder' : 'not holding'}) counts dnsmasq`, 15_000);
    await new Promise((r) => setTimeout(r, 1000));
    const said = (await world.events('ForeignDHCPServer')).reduce((n, e) => n + (e.series?.count ?? 1), 0);
    expect(said, 'said once per agent at most, not per packet').to.be.at.most(2);
  });
});
