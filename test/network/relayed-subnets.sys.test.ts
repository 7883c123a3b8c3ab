/**
 * A ProvisioningNetwork with a routed subnet behind a real relay (ADR 0032),
 * end to end in ProvisioningNetwork mode: the controller accepts
 * spec.dhcp.relayedSubnets (its pool checked), the agents put the route to
 * the rack (derived from the relayed subnet's `gateway`) in every Multus-
 * attached Ironic pod, and a udhcpc client on the rack, behind ISC dhcrelay,
 * gets an address from the rack's own pool from the VIP-holding pod.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import type { IronicPod, IronicPods } from '../../src/lab/world/ironic-pods.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { eventually } from '../support/ipam-fixture.js';
import { startProvisioningLab, type ProvisioningLab } from '../support/provisioning-lab.js';
import { VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const DHCRELAY = '/usr/sbin/dhcrelay';

describe('ProvisioningNetwork with a relayed subnet: the pods’ route and the rack’s pool, through a real dhcrelay (system)', function () {
  this.timeout(10 * 60_000);
  let world: ProvisioningLab;
  let lab: VipWorld;
  let pods: IronicPods;
  let ironic: IronicPod[] = [];
  let relay: ChildProcess | undefined;
  let client: Udhcpc | undefined;
  let router: string;

  const ns = (): string => lab.namespace;
  const admin = (): KubeClient => lab.admin;
  const holders = (): number[] => ironic.flatMap((p, i) => (ip('-n', p.netns, '-4', 'addr', 'show', 'dev', 'net1').includes(`${VIP}/32`) ? [i] : []));

  before(async function () {
    this.timeout(240_000);
    if (spawnSync(DHCRELAY, ['--version']).error) throw new Error(`this test needs ${DHCRELAY}: run \`sh scripts/setup.sh\` as root (or apt-get install isc-dhcp-relay)`);
    world = await startProvisioningLab({ timings: TIMINGS });
    lab = world.lab;
    pods = world.pods;
    await admin().resource(RESOURCES.ipPool).create({ metadata: { name: 'rack1', namespace: ns() }, spec: { namePrefix: 'rack1', pools: [{ start: '172.23.0.50', end: '172.23.0.99', subnet: '172.23.0.0/24' }], prefix: 24 } } as KubeObject);
    await world.createNetwork({
      cidr: '172.22.0.0/24',
      vip: { ipv4: VIP },
      attachment: { mode: 'macvlan', parent: 'prov0' },
      podPool: { name: 'ironic-pods' },
      dhcpPool: { name: 'dhcp' },
      ironicPodSelector: { matchLabels: { app: 'ironic' } },
      dhcp: { knownHostsOnly: false, relayedSubnets: [{ cidr: '172.23.0.0/24', pool: { name: 'rack1' }, routers: ['172.23.0.1'], leaseSeconds: 600, gateway: '172.22.0.254' }] },
      election: TIMINGS,
    });

    // the rack router and its relay: eth0 on the provisioning bridge, rack0 the rack
    router = lab.topology.addClient('router');
    ip('-n', router, 'addr', 'add', '172.22.0.254/24', 'dev', 'eth0');
    ip('-n', router, 'link', 'set', 'eth0', 'up');
    lab.net.bridge(router, 'rack0', [], '172.23.0.1/24');
    spawnSync('ip', ['netns', 'exec', router, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    relay = spawn('ip', ['netns', 'exec', router, 'setpriv', '--pdeathsig', 'KILL', '--', DHCRELAY, '-4', '-d', '--no-pid', '-a', '-iu', 'eth0', '-id', 'rack0', VIP], { stdio: 'ignore' });

    ironic = await world.podOnEachNode();
  });

  after(async () => {
    client?.stop();
    relay?.kill('SIGKILL');
    await world?.stop();
  });

  it('every Ironic pod gets the route to the rack from relayedSubnets[0].gateway; a rack host behind dhcrelay gets an address of the rack’s pool from the VIP-holding pod', async () => {
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i, [], 'networks');
    for (const p of ironic) await pods.attach(p);
    await eventually(async () => (ironic.every((p) => ip('-n', p.netns, 'route', 'show', '172.23.0.0/24').includes('172.23.0.0/24 via 172.22.0.254 dev net1')) ? true : undefined), 'the route to the rack in every pod', 60_000);
    for (const p of ironic) await pods.setReady(p);
    await eventually(async () => (holders().length === 1 ? true : undefined), 'one VIP holder', 30_000).catch(async (err: unknown) => {
      const n = await admin().resource<{ status?: unknown } & KubeObject>(RESOURCES.provisioningNetwork).get({ namespace: ns(), name: 'provisioning' });
      throw new Error(`${(err as Error).message}; the network's status: ${JSON.stringify(n.status)}`);
    });

    const mac = '52:54:00:23:10:01';
    const host = lab.net.netns('rackhost');
    lab.net.veth({ ns: host, name: 'eth0' }, { ns: router, name: 'rh0' });
    ip('-n', host, 'link', 'set', 'eth0', 'address', mac);
    ip('-n', router, 'link', 'set', 'rh0', 'master', 'rack0');
    client = new Udhcpc(host);
    const bound = await client.waitFor('bound', 0, 60_000);
    expect(bound.ip, "an address of the rack's pool").to.match(/^172\.23\.0\.(5\d|[6-9]\d)$/);
    expect(bound.server).to.equal(VIP);
    expect(bound.router).to.equal('172.23.0.1');
    expect(Number(bound.lease)).to.equal(600);
    expect(await dhcpLeaseOf(admin(), ns(), 'rack1', mac)).to.equal(bound.ip);
    // the controller counts the rack's leases in the network's status
    await eventually(async () => {
      const n = await admin().resource<{ status?: { leases?: number } } & KubeObject>(RESOURCES.provisioningNetwork).get({ namespace: ns(), name: 'provisioning' });
      return (n.status?.leases ?? 0) >= 1 ? true : undefined;
    }, 'status.leases counting the rack lease', 30_000);
  });
});
