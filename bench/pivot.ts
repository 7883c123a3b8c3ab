/**
 * npm run bench:pivot — a Metal3 pivot seen from the provisioning network:
 * ironet's runbook (`ironet pivot` driving the real clusterctl between two
 * real API servers, src/lab/world/pivot-world.ts) against keepalived's pivot
 * as Metal3 runs it today (two keepalived, VRID 1, each beside a dnsmasq
 * configured as ironic-image configures it; the target's Ironic started, then
 * the source's deleted, as metal3-docs' pivoting guide says), in the same run
 * and topology. IRONET_BENCH_TRIALS trials of each (default 3).
 *
 * Per trial, from the wire: the longest time a client asking "who has the
 * VIP?" every 10 ms got no answer (VIP unanswered), how many of those probes
 * two MACs answered (two MACs; netlink says the same from the holders'
 * namespaces), DHCP leases lost (bound before the pivot, unknown to the server
 * that serves after it), addresses changed (a udhcpc renewing and a dhclient
 * rebooting after the pivot, against what they had) and NAKs seen.
 *
 * Last line: one JSON object {ironet, keepalived}, each {vipUnansweredMs:
 * {median, max}, twoMacProbes, dualHolderMs, leasesLost, addressesChanged,
 * naks, trials}.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runController } from '../src/cmd/controller.js';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import type { DhcpLeaseBlockObject } from '../src/dhcp/blocks.js';
import { RESOURCES } from '../src/kube/resources.js';
import { ArpProbe } from '../src/lab/rig/arp-probe.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { ensureClusterctl } from '../src/lab/rig/clusterctl.js';
import { DhcpCapture } from '../src/lab/rig/dhcp-capture.js';
import { dhclient, Udhcpc } from '../src/lab/rig/dhcp-clients.js';
import { Dnsmasq } from '../src/lab/rig/dnsmasq.js';
import { runIronetPivot } from '../src/lab/rig/ironet-pivot.js';
import { Keepalived } from '../src/lab/rig/keepalived.js';
import { NetnsSet, requireRoot, sweepStale } from '../src/lab/rig/netns-set.js';
import { upstreamCrdDirs } from '../src/lab/rig/upstream-builds.js';
import { ADDRESSED, NODE_PROVISIONING_IFACE, PROVISIONING_BRIDGE } from '../src/lab/topology-plan.js';
import { PIVOT_NAMESPACE as NS, PIVOT_VIP as VIP, PivotWorld } from '../src/lab/world/pivot-world.js';
import { Topology } from '../src/lab/world/topology.js';
import { VipWatch } from '../src/lab/world/vip-watch.js';

const TRIALS = Number(process.env.IRONET_BENCH_TRIALS ?? 3);
/** ironet or keepalived: run only that side. */
const ONLY = process.env.IRONET_BENCH_ONLY;
const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const UDHCPC = '52:54:00:aa:00:01';
const DHCLIENT = '52:54:00:aa:00:03';
const now = (): number => systemClock.monotonicMs();
const sleep = (ms: number): Promise<void> => systemClock.sleep(ms);

interface Trial {
  vipUnansweredMs: number;
  twoMacProbes: number;
  dualHolderMs: number;
  leasesLost: number;
  addressesChanged: number;
  naks: number;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Two clients bound before the pivot; after it, the udhcpc renews and the dhclient reboots. */
async function clientsBefore(topology: Topology, capture: DhcpCapture): Promise<{ udhcpc: Udhcpc; dhNs: string; before: Map<string, string> }> {
  const ns = topology.addClient('udhcpc', UDHCPC);
  capture.add('c0');
  const udhcpc = new Udhcpc(ns);
  const bound = await udhcpc.waitFor('bound', 0, 60_000);
  const dhNs = topology.addClient('dhclient', DHCLIENT);
  capture.add('c1');
  const dh = dhclient(dhNs, []).find((e) => e.kind === 'BOUND');
  if (!dh) throw new Error('dhclient did not bind before the pivot');
  return { udhcpc, dhNs, before: new Map([[UDHCPC, bound.ip], [DHCLIENT, dh.ip]]) };
}

/**
 * After the pivot: the udhcpc renews (and keeps renewing a while), then the
 * dhclient reboots (synchronously: the wire's figures are read before, at
 * `wireEnd`); addresses that differ from before.
 */
async function clientsAfter(c: { udhcpc: Udhcpc; dhNs: string; before: Map<string, string> }, waitMs: number): Promise<{ changed: number; wireEnd: number }> {
  const from = c.udhcpc.events.length;
  for (let t = 0; t < waitMs; t += 1000) {
    c.udhcpc.renew();
    await sleep(1000);
  }
  const wireEnd = now();
  const renewed = c.udhcpc.events.slice(from).filter((e) => e.kind === 'renew' || e.kind === 'bound').at(-1)?.ip ?? c.udhcpc.events.filter((e) => e.kind === 'bound').at(-1)?.ip;
  const rebooted = dhclient(c.dhNs, [], 20_000).find((e) => e.kind === 'REBOOT' || e.kind === 'BOUND')?.ip;
  return { changed: [renewed !== c.before.get(UDHCPC), rebooted !== c.before.get(DHCLIENT)].filter(Boolean).length, wireEnd };
}

async function ironetTrial(dir: string): Promise<Trial> {
  const world = await PivotWorld.start({
    clock: systemClock,
    logger: silentLogger,
    timings: TIMINGS,
    leaseSeconds: 120,
    runController: (side, kube, signal) =>
      runController(
        { command: 'controller', logLevel: 'info', logFormat: 'json', kubeconfig: undefined, context: undefined, namespace: NS, metricsHost: '127.0.0.1', metricsPort: 0, podName: `controller-${side}`, ipamBatchSize: 500, ipamWriteConcurrency: 32, noAgentGraceSeconds: 60, secondPodGraceSeconds: 120 },
        { version: 'bench', env: {}, signal, kube, logger: silentLogger },
      ),
    ironet: ironetCommand('source'),
    upstreamCrdDirs: await upstreamCrdDirs(),
  });
  const capture = new DhcpCapture({ netnsPath: world.topology.path(world.topology.provisioning), clock: systemClock });
  let clients: Awaited<ReturnType<typeof clientsBefore>> | undefined;
  try {
    await world.createSourceNetwork();
    world.source.runKubelet();
    world.source.startAgents();
    await until('a source holder', async () => ((await world.holdersNow()).length === 1 ? true : undefined));
    await until('the source Ready', async () => ((await world.source.network())?.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'Ready' ? true : undefined));
    world.target.runKubelet();
    world.target.startAgents();
    clients = await clientsBefore(world.topology, capture);
    const t0 = now();
    const renewing = setInterval(() => clients?.udhcpc.renew(), 1000);
    const { binary } = await ensureClusterctl();
    const out = await runIronetPivot(['--from', await world.kubeconfigIn(world.source, dir), '--to', await world.kubeconfigIn(world.target, dir), '--namespace', NS, '--clusterctl', binary, '--timeout-seconds', '120']);
    clearInterval(renewing);
    if (out.code !== 0) throw new Error(`ironet pivot failed:\n${out.lines.join('\n')}`);
    // what the serving side knows when it takes over, before any client comes back to it
    const blocks = (await world.target.admin.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(NS)).items;
    const leases = new Map(blocks.flatMap((b) => Object.entries(b.spec?.leases ?? {}).map(([ip, mac]) => [mac, ip] as const)));
    const { changed, wireEnd: t1 } = await clientsAfter(clients, 5000);
    const wire = world.arp.window(t0, t1);
    return {
      vipUnansweredMs: wire.longestSilenceMs,
      twoMacProbes: wire.conflicts,
      dualHolderMs: world.vip.dualHolderMs(t0, t1),
      leasesLost: [...clients.before].filter(([mac, ip]) => leases.get(mac) !== ip).length,
      addressesChanged: changed,
      naks: capture.summary().naks.length,
    };
  } finally {
    clients?.udhcpc.stop();
    capture.close();
    await world.stop();
  }
}

/** keepalived's pivot: source node 0 and target node 2 each run keepalived (VRID 1) and dnsmasq on prov0, as Metal3's Ironic pod does on the host network. */
async function keepalivedTrial(): Promise<Trial> {
  const net = new NetnsSet();
  const topology = Topology.build(net, { nodes: 4, segment: 'addressed' });
  const vip = new VipWatch(VIP, systemClock);
  for (const i of [0, 2]) vip.observe(i, topology.path(topology.nodes[i]!));
  const arp = new ArpProbe({ netnsPath: topology.path(topology.provisioning), iface: PROVISIONING_BRIDGE, senders: ADDRESSED.arpProbeSenders, target: VIP, everyMs: 10, clock: systemClock });
  const capture = new DhcpCapture({ netnsPath: topology.path(topology.provisioning), clock: systemClock });
  const side = (node: number) => ({
    keepalived: new Keepalived({ netns: topology.nodes[node]!, iface: NODE_PROVISIONING_IFACE, vip: VIP, routerId: `node${node}`, priority: 100 }),
    dnsmasq: new Dnsmasq({ netns: topology.nodes[node]!, iface: NODE_PROVISIONING_IFACE, range: '172.22.0.150,172.22.0.199,255.255.255.0,2m' }),
  });
  const source = side(0);
  const target = side(2);
  let clients: Awaited<ReturnType<typeof clientsBefore>> | undefined;
  try {
    source.keepalived.start();
    source.dnsmasq.start();
    await until('source keepalived MASTER', async () => ((await vip.holdersNow()).join() === '0' ? true : undefined), 30_000);
    clients = await clientsBefore(topology, capture);
    const t0 = now();
    // metal3-docs: the target's Ironic (keepalived + dnsmasq) is installed, then the source's deleted before clusterctl move
    target.keepalived.start();
    target.dnsmasq.start();
    await sleep(5000);
    await source.keepalived.stop();
    await source.dnsmasq.stop();
    await until('target keepalived holds the VIP', async () => ((await vip.holdersNow()).join() === '2' ? true : undefined), 30_000);
    // what the serving side knows when it takes over, before any client comes back to it
    const leases = target.dnsmasq.leases();
    const { changed, wireEnd: t1 } = await clientsAfter(clients, 5000);
    const wire = arp.window(t0, t1);
    return {
      vipUnansweredMs: wire.longestSilenceMs,
      twoMacProbes: wire.conflicts,
      dualHolderMs: vip.dualHolderMs(t0, t1),
      leasesLost: [...clients.before].filter(([mac]) => !leases.has(mac)).length,
      addressesChanged: changed,
      naks: capture.summary().naks.length,
    };
  } finally {
    clients?.udhcpc.stop();
    capture.close();
    arp.close();
    for (const s of [source, target]) {
      await s.keepalived.close();
      await s.dnsmasq.close();
    }
    vip.close();
    net.cleanup();
  }
}

function summary(trials: readonly Trial[]) {
  const sorted = trials.map((t) => t.vipUnansweredMs).sort((a, b) => a - b);
  return {
    vipUnansweredMs: { median: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 },
    twoMacProbes: trials.reduce((n, t) => n + t.twoMacProbes, 0),
    dualHolderMs: Math.max(0, ...trials.map((t) => t.dualHolderMs)),
    leasesLost: trials.reduce((n, t) => n + t.leasesLost, 0),
    addressesChanged: trials.reduce((n, t) => n + t.addressesChanged, 0),
    naks: trials.reduce((n, t) => n + t.naks, 0),
    trials: trials.length,
  };
}

async function main(): Promise<void> {
  requireRoot();
  sweepStale();
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-bench-pivot-'));
  const results: Record<'ironet' | 'keepalived', Trial[]> = { ironet: [], keepalived: [] };
  try {
    for (let i = 0; i < TRIALS; i++) {
      for (const [name, run] of [['ironet', () => ironetTrial(dir)], ['keepalived', keepalivedTrial]] as const) {
        if (ONLY && ONLY !== name) continue;
        const t = await run();
        results[name].push(t);
        console.log(`${name.padEnd(10)} trial ${i + 1}: VIP unanswered ${t.vipUnansweredMs} ms, probes answered by two MACs ${t.twoMacProbes}, two holders (netlink) ${t.dualHolderMs} ms, leases lost ${t.leasesLost}/2, addresses changed ${t.addressesChanged}/2, NAKs ${t.naks}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ ironet: summary(results.ironet), keepalived: summary(results.keepalived) }));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
