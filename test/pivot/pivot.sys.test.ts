/**
 * A real pivot (issue 19, point 5): two real API servers ("bootstrap" and
 * "target"), each with ironet's controller and agents and Ironic pods on one
 * provisioning bridge; the real clusterctl (v1.14.0) moves BareMetalHosts,
 * a Cluster's host IPAM and ironet's objects, driven by `ironet pivot`.
 * Measured from the wire (who answers ARP for the VIP, every 10 ms, on the
 * bridge; every DHCP reply to the clients) and from netlink in every pod:
 * never two MACs for the VIP, no DHCP client NAKed or given another address,
 * no lease lost, no host address changed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ensureClusterctl } from '../../src/lab/rig/clusterctl.js';
import { ironetCommand } from '../../src/lab/rig/checkout.js';
import { DhcpCapture } from '../../src/lab/rig/dhcp-capture.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { PIVOT_NAMESPACE, PivotWorld, type PivotSide } from '../../src/lab/world/pivot-world.js';
import { controllerConfig, upstreamCrdDirs } from '../support/cluster.js';
import { Udhcpc, dhclient } from '../support/dhcp-clients.js';
import { eventually } from '../support/ipam-fixture.js';

const TIMINGS = { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 300 };
const NS = PIVOT_NAMESPACE;

/** Runs `ironet pivot` as a user would; its output lines and the JSON line it ends with. */
async function ironetPivot(args: readonly string[]): Promise<{ code: number; lines: string[]; result: { ok: boolean; networks: { name: string; takeoverMs?: number; holderNamedMs?: number }[] } | undefined }> {
  const [cmd, ...pre] = ironetCommand('source');
  const child = spawn(cmd!, [...pre, 'pivot', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  createInterface(child.stdout).on('line', (l) => lines.push(l));
  createInterface(child.stderr).on('line', (l) => lines.push(`stderr: ${l}`));
  const code = await new Promise<number>((resolve) => child.once('close', (c) => resolve(c ?? 1)));
  const last = lines.filter((l) => l.startsWith('{')).at(-1);
  return { code, lines, result: last ? (JSON.parse(last) as never) : undefined };
}

describe('pivot: ironet pivot and clusterctl move between two clusters on one provisioning network (system)', function () {
  this.timeout(15 * 60_000);
  let world: PivotWorld;
  let dir: string;
  let capture: DhcpCapture;
  const clients: Udhcpc[] = [];

  before(async function () {
    this.timeout(300_000);
    dir = mkdtempSync(path.join(tmpdir(), 'irn-pivot-'));
    world = await PivotWorld.start({
      clock: systemClock,
      logger: silentLogger,
      timings: TIMINGS,
      leaseSeconds: 60,
      runController: (side, kube, signal) => runController({ ...controllerConfig(NS, 0), podName: `controller-${side}` }, { version: 'test', env: {}, signal, kube, logger: silentLogger }),
      ironet: ironetCommand('source'),
      upstreamCrdDirs: await upstreamCrdDirs(),
      logDir: process.env.IRONET_TEST_LOG ? dir : undefined,
      agentLogLevel: process.env.IRONET_TEST_LOG_LEVEL,
    });
    await world.createSourceNetwork();
    world.source.runKubelet();
    world.source.startAgents();
    await eventually(async () => ((await world.holdersNow()).length === 1 ? true : undefined), 'a source pod holds the VIP', 60_000);
    await eventually(async () => ((await world.source.network())?.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'Ready' ? true : undefined), 'the source network Ready', 60_000);
    // the target: ironet installed, its Ironic pods wait for the network's NAD (kubelet retries the sandbox)
    world.target.runKubelet();
    world.target.startAgents();
    capture = new DhcpCapture({ netnsPath: world.topology.path(world.topology.provisioning), clock: systemClock });
  });
  after(async () => {
    for (const c of clients) c.stop();
    capture?.close();
    await world?.stop();
    if (dir && !process.env.IRONET_TEST_LOG) rmSync(dir, { recursive: true, force: true });
  });

  /** Sources clients on the bridge (port c<n> in the bridge's namespace), each captured. */
  function addClient(label: string, mac: string): string {
    const ns = world.topology.addClient(label, mac);
    capture.add(`c${clients.length + (label.startsWith('dh') ? 10 : 0)}`);
    return ns;
  }

  it('the runbook: the source hands over, clusterctl moves, the target takes over — one VIP holder, no NAK, no lease or address lost', async () => {
    const src = world.source.admin;
    // DHCP clients bound before the pivot
    for (const [i, mac] of ['52:54:00:aa:00:01', '52:54:00:aa:00:02'].entries()) {
      const ns = world.topology.addClient(`udhcpc${i}`, mac);
      capture.add(`c${i}`);
      const c = new Udhcpc(ns);
      clients.push(c);
      await c.waitFor('bound', 0, 60_000);
    }
    const before = clients.map((c) => c.events.find((e) => e.kind === 'bound')!.ip);
    // hosts with IPAM: a Cluster's pool and claims (moved as its hierarchy), BareMetalHosts labelled to move
    const cluster = await src.resource({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', kind: 'Cluster', namespaced: true }).create({ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', metadata: { name: 'target-mgmt', namespace: NS }, spec: { clusterNetwork: { pods: { cidrBlocks: ['10.244.0.0/16'] } } } } as KubeObject);
    // provisioned, as CAPI leaves a running cluster (clusterctl refuses to move one still provisioning)
    await src.resource({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', kind: 'Cluster', namespaced: true }).mergePatchStatus({ namespace: NS, name: 'target-mgmt' }, {
      status: { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true }, conditions: [{ type: 'ControlPlaneInitialized', status: 'True', reason: 'Initialized', message: '', lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }] },
    });
    const owner = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: 'target-mgmt', uid: cluster.metadata.uid ?? '' }];
    await src.resource(RESOURCES.ipPool).create({ metadata: { name: 'hosts', namespace: NS, ownerReferences: owner }, spec: { clusterName: 'target-mgmt', namePrefix: 'hosts', pools: [{ start: '172.22.0.60', end: '172.22.0.80' }], prefix: 24 } } as KubeObject);
    for (const h of ['host-0', 'host-1', 'host-2']) {
      await src.resource(RESOURCES.ipClaim).create({ metadata: { name: `${h}-hosts`, namespace: NS, ownerReferences: owner }, spec: { pool: { name: 'hosts' } } } as KubeObject);
      await src.resource(RESOURCES.bareMetalHost).create({ metadata: { name: h, namespace: NS, labels: { 'clusterctl.cluster.x-k8s.io/move': '' } }, spec: { online: false, bootMACAddress: `52:54:00:bb:00:0${h.at(-1)}` } } as KubeObject);
    }
    const hostAddresses = await eventually(async () => {
      const claims = (await src.resource<IpClaimObject>(RESOURCES.ipClaim).list(NS)).items.filter((c) => c.metadata.name?.endsWith('-hosts'));
      return claims.length === 3 && claims.every((c) => c.status?.address?.name) ? Object.fromEntries(claims.map((c) => [c.metadata.name, c.status!.address!.name])) : undefined;
    }, 'the hosts\' claims bound on the source', 30_000);

    // renewing throughout
    const renewing = setInterval(() => clients.forEach((c) => c.renew()), 1000);
    const t0 = systemClock.monotonicMs();
    const { binary } = await ensureClusterctl();
    const out = await ironetPivot(['--from', await world.kubeconfigIn(world.source, dir), '--to', await world.kubeconfigIn(world.target, dir), '--namespace', NS, '--clusterctl', binary, '--timeout-seconds', '120']);
    const t1 = systemClock.monotonicMs();
    await new Promise((r) => setTimeout(r, 3000));
    clearInterval(renewing);
    expect(out.code, out.lines.join('\n')).to.equal(0);
    expect(out.result?.ok).to.equal(true);

    const holders = await world.holdersNow();
    expect(holders, 'a target pod holds the VIP').to.have.length(1);
    expect(world.target.nodes).to.include(holders[0]);
    expect(world.vip.dualHolderMs(), 'never two pods holding the VIP (netlink)').to.equal(0);
    const wire = world.arp.window(t0, t1 + 3000);
    expect(wire.conflicts, 'never two MACs answering for the VIP (the wire)').to.equal(0);
    console.log(`      VIP unanswered at most ${wire.longestSilenceMs} ms; MACs ${wire.macs.join(' → ')}; takeover ${out.result?.networks[0]?.takeoverMs} ms after the source let go`);

    // DHCP: no NAK, every client kept its address
    const seen = capture.summary(0);
    expect(seen.naks, 'no NAK').to.deep.equal([]);
    for (const [mac, ips] of seen.acked) expect(ips, `${mac} ACKed one address`).to.have.length(1);
    const after = clients.map((c) => c.events.filter((e) => e.kind === 'bound' || e.kind === 'renew').at(-1)!.ip);
    expect(after, 'the same addresses').to.deep.equal(before);
    // every lease in the target's blocks
    const blocks = (await world.target.admin.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(NS)).items;
    const leases = Object.fromEntries(blocks.flatMap((b) => Object.entries(b.spec?.leases ?? {})));
    for (const [i, ip] of before.entries()) expect(leases[ip], `lease ${ip} on the target`).to.equal(['52:54:00:aa:00:01', '52:54:00:aa:00:02'][i]);
    // the hosts' addresses: the same claims, the same addresses, none twice
    const tgtClaims = (await world.target.admin.resource<IpClaimObject>(RESOURCES.ipClaim).list(NS)).items.filter((c) => c.metadata.name?.endsWith('-hosts'));
    const addrs = (await world.target.admin.resource<IpAddressObject>(RESOURCES.ipAddress).list(NS)).items;
    await eventually(async () => {
      const claims = (await world.target.admin.resource<IpClaimObject>(RESOURCES.ipClaim).list(NS)).items.filter((c) => c.metadata.name?.endsWith('-hosts'));
      return claims.every((c) => c.status?.address?.name) ? true : undefined;
    }, 'the hosts\' claims bound on the target', 30_000);
    expect(Object.fromEntries(tgtClaims.map((c) => [c.metadata.name, c.status?.address?.name]))).to.deep.equal(hostAddresses);
    const spec = addrs.map((a) => a.spec?.address);
    expect(new Set(spec).size, `no address twice: ${spec.join(',')}`).to.equal(spec.length);
    expect((await world.target.admin.resource(RESOURCES.bareMetalHost).list(NS)).items.map((h) => h.metadata.name).sort()).to.deep.equal(['host-0', 'host-1', 'host-2']);
    const podAddrs = [...world.source.ironic, ...world.target.ironic].map((p) => `${p.name}: ${ip('-n', p.netns, '-4', '-o', 'addr', 'show', 'dev', 'net1').split('\n').map((l) => l.split(/\s+/)[3]).join(' ')}`);
    console.log(podAddrs.join('\n'));
    void ({} as PivotSide);
    void dhclient;
  });
});
