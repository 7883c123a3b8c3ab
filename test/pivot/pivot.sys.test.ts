/**
 * A real pivot (issue 19, point 5): two real API servers ("bootstrap" and
 * "target"), each with ironet's controller and agents and its own Ironic pods
 * on one provisioning bridge; `ironet pivot` drives the real clusterctl
 * (v1.14.0), which moves BareMetalHosts, a Cluster's host IPAM and ironet's
 * objects. Measured from the wire (who answers ARP for the VIP, every 10 ms,
 * on the bridge; every DHCP reply to every client, on its bridge port) and
 * from netlink in every pod: never two MACs for the VIP, no DHCP client
 * NAKed or given another address (udhcpc renewing, dhclient rebooting, a QEMU
 * machine PXE-booting again in the middle), no lease lost, no address on the
 * wire twice. Then the mistakes: both clusters Active, the serving cluster
 * deleted without a handover, a forgotten keepalived — each said with a
 * VIPConflictOnWire Event and settled by the wire rule, one holder at a time.
 */
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { createLogger } from '../../src/log/logger.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ironetCommand } from '../../src/lab/rig/checkout.js';
import { ensureClusterctl } from '../../src/lab/rig/clusterctl.js';
import { DhcpCapture } from '../../src/lab/rig/dhcp-capture.js';
import { runIronetPivot } from '../../src/lab/rig/ironet-pivot.js';
import { Keepalived } from '../../src/lab/rig/keepalived.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools } from '../../src/lab/rig/qemu.js';
import { PROVISIONING_BRIDGE } from '../../src/lab/topology-plan.js';
import { PIVOT_NAMESPACE as NS, PIVOT_NETWORK, PIVOT_VIP, PivotWorld, type PivotSide } from '../../src/lab/world/pivot-world.js';
import { controllerConfig, upstreamCrdDirs } from '../support/cluster.js';
import { dhclient, Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { eventually } from '../support/ipam-fixture.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const CLUSTER = { group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', kind: 'Cluster', namespaced: true } as const;
const UDHCPC_MACS = ['52:54:00:aa:00:01', '52:54:00:aa:00:02'];
const DHCLIENT_MAC = '52:54:00:aa:00:03';
const QEMU_A = '52:54:00:cc:00:0a';
const QEMU_B = '52:54:00:cc:00:0b';

/** Every IPv4 address on the pods' net1 and the clients' eth0, with where it is. */
function addressesOnTheWire(namespaces: readonly { name: string; netns: string; iface: string }[]): { where: string; ip: string }[] {
  return namespaces.flatMap((n) =>
    ip('-n', n.netns, '-4', '-o', 'addr', 'show', 'dev', n.iface)
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => ({ where: n.name, ip: l.trim().split(/\s+/)[3]!.split('/')[0]! })),
  );
}

async function readyReason(side: PivotSide): Promise<string | undefined> {
  return (await side.network())?.status?.conditions?.find((c) => c.type === 'Ready')?.reason;
}

async function eventsOn(kube: KubeClient, reason: string): Promise<EventObject[]> {
  return (await kube.resource<EventObject>(RESOURCES.event).list(NS)).items.filter((e) => e.regarding.name === PIVOT_NETWORK && e.reason === reason);
}

describe('pivot: ironet pivot and clusterctl move between two clusters on one provisioning network (system)', function () {
  this.timeout(15 * 60_000);
  let world: PivotWorld;
  let dir: string;
  let capture: DhcpCapture;
  const clients: Udhcpc[] = [];
  const machines: QemuMachine[] = [];
  const clientNamespaces: { name: string; netns: string; iface: string }[] = [];
  let keepalived: Keepalived | undefined;
  let taps = 0;

  /** A QEMU machine (SeaBIOS + iPXE ROM) PXE-booting with `mac`, its replies captured; resolves once it fetched boot.ipxe, with its address. */
  async function pxeBoot(mac: string): Promise<string> {
    const tap = `tap${taps++}`;
    const m = new QemuMachine({ bridgeNs: world.topology.provisioning, bridge: PROVISIONING_BRIDGE, tap, mac, firmware: 'bios' });
    machines.push(m);
    capture.add(tap);
    try {
      return await eventually(async () => {
        const acked = capture.summary().acked.get(mac)?.at(-1);
        return acked && world.http.hitFrom(acked) ? acked : undefined;
      }, `${mac} to lease and fetch boot.ipxe`, 90_000);
    } catch (err) {
      const mine = capture.replies.filter((r) => r.mac === mac).map((r) => `${r.type} ${r.yiaddr}`);
      throw new Error(`${(err as Error).message} (replies seen: ${mine.join(', ') || 'none'} of ${capture.replies.length}; boot.ipxe hits: ${world.http.hits.map((h) => h.from).join(', ')})\n${m.tail()}`, { cause: err });
    } finally {
      m.stop();
    }
  }

  before(async function () {
    this.timeout(300_000);
    requirePxeTools();
    dir = mkdtempSync(path.join(tmpdir(), 'irn-pivot-'));
    world = await PivotWorld.start({
      clock: systemClock,
      logger: silentLogger,
      timings: TIMINGS,
      leaseSeconds: 120,
      runController: (side, kube, signal) =>
        runController({ ...controllerConfig(NS, 0), podName: `controller-${side}` }, { version: 'test', env: {}, signal, kube, logger: process.env.IRONET_TEST_LOG ? createLogger({ level: 'info', format: 'json', component: 'controller', destination: createWriteStream(path.join(dir, `${side}-controller.log`)) }) : silentLogger }),
      ironet: ironetCommand('source'),
      upstreamCrdDirs: await upstreamCrdDirs(),
      logDir: process.env.IRONET_TEST_LOG ? dir : undefined,
      agentLogLevel: process.env.IRONET_TEST_LOG_LEVEL,
    });
    capture = new DhcpCapture({ netnsPath: world.topology.path(world.topology.provisioning), clock: systemClock });
    await world.createSourceNetwork();
    world.source.runKubelet();
    world.source.startAgents();
    await eventually(async () => ((await world.holdersNow()).length === 1 ? true : undefined), 'a source pod holds the VIP', 60_000);
    await eventually(async () => ((await readyReason(world.source)) === 'Ready' ? true : undefined), 'the source network Ready', 60_000);
    // the target: ironet installed, its Ironic pods waiting for the network's NAD (kubelet retries their sandboxes)
    world.target.runKubelet();
    world.target.startAgents();
  });
  after(async () => {
    for (const c of clients) c.stop();
    for (const m of machines) m.stop();
    await keepalived?.close();
    capture?.close();
    await world?.stop();
    if (dir && !process.env.IRONET_TEST_LOG) rmSync(dir, { recursive: true, force: true });
  });

  it('the runbook: the source hands over, clusterctl moves, the target takes over — one VIP holder, no NAK, no lease or address lost', async () => {
    const src = world.source.admin;
    const tgt = world.target.admin;
    // DHCP clients bound before the pivot: two udhcpc that renew throughout, a dhclient that reboots after it
    for (const [i, mac] of UDHCPC_MACS.entries()) {
      const ns = world.topology.addClient(`udhcpc${i}`, mac);
      capture.add(`c${i}`);
      clientNamespaces.push({ name: `udhcpc${i}`, netns: ns, iface: 'eth0' });
      const c = new Udhcpc(ns);
      clients.push(c);
      await c.waitFor('bound', 0, 60_000);
    }
    const dhNs = world.topology.addClient('dhclient', DHCLIENT_MAC);
    capture.add('c2');
    clientNamespaces.push({ name: 'dhclient', netns: dhNs, iface: 'eth0' });
    const dhBound = dhclient(dhNs, []).find((e) => e.kind === 'BOUND');
    expect(dhBound?.ip, 'dhclient bound').to.match(/^172\.22\.0\.1[5-9]\d$/);
    const bound = clients.map((c) => c.events.find((e) => e.kind === 'bound')!.ip);

    // hosts: a Cluster (provisioned) whose pool and claims move as its hierarchy, BareMetalHosts labelled to move
    const cluster = await src.resource(CLUSTER).create({ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', metadata: { name: 'target-mgmt', namespace: NS }, spec: { clusterNetwork: { pods: { cidrBlocks: ['10.244.0.0/16'] } } } } as KubeObject);
    // as CAPI leaves a running cluster (clusterctl refuses to move one still provisioning)
    await src.resource(CLUSTER).mergePatchStatus({ namespace: NS, name: 'target-mgmt' }, {
      status: { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true }, conditions: [{ type: 'ControlPlaneInitialized', status: 'True', reason: 'Initialized', message: '', lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }] },
    });
    const owner = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: 'target-mgmt', uid: cluster.metadata.uid ?? '' }];
    await src.resource(RESOURCES.ipPool).create({ metadata: { name: 'hosts', namespace: NS, ownerReferences: owner }, spec: { clusterName: 'target-mgmt', namePrefix: 'hosts', pools: [{ start: '172.22.0.60', end: '172.22.0.80' }], prefix: 24 } } as KubeObject);
    for (const h of ['host-0', 'host-1', 'host-2']) {
      await src.resource(RESOURCES.ipClaim).create({ metadata: { name: `${h}-hosts`, namespace: NS, ownerReferences: owner }, spec: { pool: { name: 'hosts' } } } as KubeObject);
      await src.resource(RESOURCES.bareMetalHost).create({ metadata: { name: h, namespace: NS, labels: { 'clusterctl.cluster.x-k8s.io/move': '' } }, spec: { online: false, bootMACAddress: `52:54:00:bb:00:0${h.at(-1)}` } } as KubeObject);
    }
    // the machines that DHCP and PXE boot through the pivot are BareMetalHosts too: with hosts in the namespace, DHCP
    // answers only their boot MACs (ADR 0030), on the source and, once they moved, on the target
    for (const [i, mac] of [...UDHCPC_MACS, DHCLIENT_MAC, QEMU_A, QEMU_B].entries()) {
      await src.resource(RESOURCES.bareMetalHost).create({ metadata: { name: `booting-${i}`, namespace: NS, labels: { 'clusterctl.cluster.x-k8s.io/move': '' } }, spec: { online: false, bootMACAddress: mac } } as KubeObject);
    }
    const hostClaims = async (kube: KubeClient): Promise<Record<string, string | undefined>> =>
      Object.fromEntries((await kube.resource<IpClaimObject>(RESOURCES.ipClaim).list(NS)).items.filter((c) => c.metadata.name?.endsWith('-hosts')).map((c): [string, string | undefined] => [c.metadata.name ?? '', c.status?.address?.name]));
    const hostsBefore = await eventually(async () => {
      const c = await hostClaims(src);
      return Object.keys(c).length === 3 && Object.values(c).every(Boolean) ? c : undefined;
    }, 'the hosts\' claims bound on the source', 30_000);

    // a PXE client booted before the pivot
    const addressA = await pxeBoot(QEMU_A);

    const renewing = setInterval(() => clients.forEach((c) => c.renew()), 1000);
    const t0 = systemClock.monotonicMs();
    const { binary } = await ensureClusterctl();
    let reboot: Promise<string> | undefined;
    const out = await runIronetPivot(['--from', await world.kubeconfigIn(world.source, dir), '--to', await world.kubeconfigIn(world.target, dir), '--namespace', NS, '--clusterctl', binary, '--timeout-seconds', '120'], (l) => {
      // the machine PXE-boots again while the source hands over
      if (!reboot && / HandingOver: /.test(l)) reboot = pxeBoot(QEMU_A);
    });
    const t1 = systemClock.monotonicMs();
    expect(out.code, out.lines.join('\n')).to.equal(0);
    expect(out.result?.ok).to.equal(true);
    expect(reboot, 'the pivot printed HandingOver').to.not.equal(undefined);
    const addressAAgain = await reboot!;
    await new Promise((r) => setTimeout(r, 3000));
    clearInterval(renewing);
    // after it: a machine that was never there, and dhclient rebooting (INIT-REBOOT with its lease)
    const addressB = await pxeBoot(QEMU_B);
    const dhAgain = dhclient(dhNs, []).find((e) => e.kind === 'REBOOT' || e.kind === 'BOUND');

    // the VIP: one holder at every instant, a target pod at the end
    const holders = await world.holdersNow();
    expect(holders, 'one pod holds the VIP').to.have.length(1);
    expect(world.target.nodes, 'a target pod').to.include(holders[0]);
    expect(world.vip.dualHolderMs(), 'never two pods holding the VIP (netlink)').to.equal(0);
    const wire = world.arp.window(t0, systemClock.monotonicMs());
    expect(wire.conflicts, 'never two MACs answering for the VIP (the wire)').to.equal(0);
    expect(wire.longestSilenceMs, 'the VIP unanswered for under a second').to.be.below(1000);
    console.log(`      VIP unanswered at most ${wire.longestSilenceMs} ms (ARP every 10 ms); MACs ${wire.macs.join(' → ')}; target serving ${out.result?.networks[0]?.takeoverMs} ms after the source let go; pivot ${Math.round((t1 - t0) / 1000)} s`);

    // DHCP: no NAK on the wire, every client and machine kept its address, one address each
    const seen = capture.summary();
    expect(seen.naks, 'no NAK').to.deep.equal([]);
    for (const [mac, ips] of seen.acked) expect(ips, `${mac} was ACKed one address`).to.have.length(1);
    expect(clients.map((c) => c.events.filter((e) => e.kind === 'bound' || e.kind === 'renew').at(-1)!.ip), 'udhcpc kept its addresses').to.deep.equal(bound);
    expect(clients.map((c) => c.events.filter((e) => e.kind === 'renew' && e.server === PIVOT_VIP).length).every((n) => n > 0), 'renewals answered through the pivot').to.equal(true);
    expect(dhAgain?.ip, 'dhclient rebooting after the pivot keeps its address').to.equal(dhBound?.ip);
    expect(addressAAgain, 'the machine PXE-booting again during the pivot keeps its address').to.equal(addressA);
    expect(addressB, 'a new machine after it gets another').to.not.equal(addressA);
    // every lease in the target's blocks
    const blocks = (await tgt.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(NS)).items;
    const leases = Object.fromEntries(blocks.flatMap((b) => Object.entries(b.spec?.leases ?? {})));
    for (const [i, address] of bound.entries()) expect(leases[address], `lease ${address} on the target`).to.equal(UDHCPC_MACS[i]);
    expect(leases[dhBound!.ip]).to.equal(DHCLIENT_MAC);
    expect(leases[addressA]).to.equal(QEMU_A);

    // the hosts: the same claims with the same addresses; no address held twice in the target's IPAM
    const hostsAfter = await eventually(async () => {
      const c = await hostClaims(tgt);
      return Object.keys(c).length === 3 && Object.values(c).every(Boolean) ? c : undefined;
    }, 'the hosts\' claims bound on the target', 60_000);
    expect(hostsAfter, 'every host keeps its address').to.deep.equal(hostsBefore);
    const ipam = (await tgt.resource<IpAddressObject>(RESOURCES.ipAddress).list(NS)).items.map((a) => a.spec?.address);
    expect(new Set(ipam).size, `no address twice in IPAM: ${ipam.join(',')}`).to.equal(ipam.length);
    expect((await tgt.resource(RESOURCES.bareMetalHost).list(NS)).items.map((h) => h.metadata.name).sort()).to.deep.equal(['booting-0', 'booting-1', 'booting-2', 'booting-3', 'booting-4', 'host-0', 'host-1', 'host-2']);

    // the wire: no address on two interfaces (both clusters' pods, every client)
    const onWire = addressesOnTheWire([...[...world.source.ironic, ...world.target.ironic].map((p) => ({ name: p.name, netns: p.netns, iface: 'net1' })), ...clientNamespaces]);
    const twice = onWire.filter((a, i) => onWire.findIndex((b) => b.ip === a.ip) !== i);
    expect(twice, `addresses on two interfaces: ${JSON.stringify(onWire)}`).to.deep.equal([]);
    const aside = await eventsOn(tgt, 'PodAddressInUse');
    expect(aside.length, 'the target\'s pods found the source pods\' addresses in use and took others').to.be.greaterThan(0);
  });

  it('both clusters Active (the source\'s network made again without a handover): its agent wins its Lease but never installs the VIP the target answers for, and says so', async () => {
    const t0 = systemClock.monotonicMs();
    const arp0 = world.arp.stats().conflicts;
    const src = world.source.admin;
    // what a user re-applying the bootstrap cluster's manifests does (the move took the pools and the network away;
    // the garbage collector, which this world does not run, took the network's NAD with it)
    await src.resource(RESOURCES.networkAttachmentDefinition).delete({ namespace: NS, name: PIVOT_NETWORK });
    await world.createSourceNetwork();
    const blocked = await eventually(async () => (await eventsOn(src, 'VIPConflictOnWire'))[0], 'a VIPConflictOnWire Event on the source', 60_000);
    expect(blocked.type).to.equal('Warning');
    expect(blocked.note).to.match(/is answered on the provisioning network by .*, an ironet agent .*leaves the VIP off \(and DHCP unserved\).*spec\.role: Standby/);
    const assigned = await eventually(async () => (await world.source.network())?.status?.conditions?.find((c) => c.type === 'VIPAssigned' && c.reason === 'VIPConflictOnWire'), 'VIPAssigned False VIPConflictOnWire on the source', 30_000);
    expect(assigned.status).to.equal('False');
    await new Promise((r) => setTimeout(r, 2000));
    const holders = await world.holdersNow();
    expect(holders, 'still the target alone').to.have.length(1);
    expect(world.target.nodes).to.include(holders[0]);
    expect(world.vip.dualHolderMs(t0), 'never two holders (netlink)').to.equal(0);
    expect(world.arp.stats().conflicts - arp0, 'never two MACs (the wire)').to.equal(0);
  });

  it('the serving cluster deleted without a handover (agents killed, API server gone): the other takes the VIP once it lapsed, never both', async () => {
    const t0 = systemClock.monotonicMs();
    const arp0 = world.arp.stats().conflicts;
    await world.target.destroy();
    const next = await world.vip.nextHolder(t0, 15_000);
    expect(next, 'a source pod takes the VIP').to.not.equal(undefined);
    expect(world.source.nodes).to.include(next!.node);
    expect(next!.atMs - t0, 'within the kernel lifetime, a renew and a probe').to.be.below(TIMINGS.leaseDurationMs + 2000);
    expect(world.vip.dualHolderMs(t0), 'never two holders (netlink)').to.equal(0);
    expect(world.arp.stats().conflicts - arp0, 'never two MACs (the wire)').to.equal(0);
    await eventually(async () => ((await readyReason(world.source)) === 'Ready' ? true : undefined), 'the source network Ready again', 60_000);
  });

  it('a forgotten keepalived on the segment: the holder yields to it with an Event, and takes the VIP back when it stops', async () => {
    const ns = world.topology.addClient('keepalived', '52:54:00:dd:00:01');
    ip('-n', ns, 'addr', 'add', '172.22.0.230/24', 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    world.vip.observe(99, world.topology.path(ns));
    const holder = (await world.holdersNow())[0]!;
    const started = systemClock.monotonicMs();
    keepalived = new Keepalived({ netns: ns, iface: 'eth0', vip: PIVOT_VIP, routerId: 'forgotten', priority: 101 });
    keepalived.start();
    const took = await world.vip.nextHolder(started, 15_000, holder);
    expect(took?.node, 'keepalived becomes MASTER').to.equal(99);
    const yielded = await eventually(async () => (await eventsOn(world.source.admin, 'VIPConflictOnWire')).find((e) => /not an ironet agent/.test(e.note ?? '') && /gave it up/.test(e.note ?? '')), 'the yield said', 15_000);
    expect(yielded.note).to.match(/remove the VIP from it/);
    await eventually(async () => ((await world.holdersNow()).join() === '99' ? true : undefined), 'keepalived alone', 10_000);
    expect(world.vip.dualHolderMs(started), 'keepalived never probes: the overlap is the holder\'s time to yield').to.be.below(3000);
    const stopped = systemClock.monotonicMs();
    await keepalived.stop();
    const back = await world.vip.nextHolder(stopped, 10_000, 99);
    expect(world.source.nodes).to.include(back?.node);
    expect(world.vip.dualHolderMs(stopped), 'no overlap on taking it back').to.equal(0);
  });
});
