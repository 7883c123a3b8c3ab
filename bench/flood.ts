/**
 * npm run bench:flood — a DHCP flood from random MACs against the agent's
 * new-lease limits (docs/dhcp.md "Floods", ADR 0028), with known PXE-like
 * clients booting through it, the API writes it costs counted, and the
 * agent's and the controller's memory against the chart's limits.
 *
 * Topology as bench:dhcp (src/lab/world/vip-world.ts): one node namespace on
 * the provisioning bridge, a real kube-apiserver + etcd, ISC perfdhcp on the
 * bridge (a relay: giaddr = its address). The agent runs from dist/ as in the
 * image, with `--dhcp-known-hosts any` (the worst case: with the default,
 * `auto`, and BareMetalHosts in the namespace, every unknown MAC is dropped
 * before any limit) and the default limits; `ironet controller` runs beside it
 * on the same namespace.
 *
 * - Flood: perfdhcp, full DORA, IRONET_FLOOD_CLIENTS (default 100,000) random
 *   MACs at IRONET_FLOOD_RATE (default 20,000) new clients/s for
 *   IRONET_FLOOD_SECONDS (default 30): the rate asked is beyond what the box
 *   sends; what perfdhcp sent is printed.
 * - Known clients: IRONET_FLOOD_KNOWN (default 8) BareMetalHosts, each with a
 *   busybox udhcpc in its own namespace (its boot MAC), started 5 s into the
 *   flood: the time to a lease each.
 * - API writes: kube-apiserver's apiserver_request_total (POST, PUT, PATCH,
 *   DELETE, APPLY) from the start of the flood until 10 s after it, against the
 *   stated bound: 4 writes per lease the limits admit (burst + rate × seconds,
 *   plus the known clients), plus 4 per second for everything else (Leases,
 *   heartbeats, Events).
 * - Memory: peak RSS (VmHWM) of the agent and the controller against the
 *   chart's limits (charts/ironet/values.yaml).
 *
 * Last line: one JSON object.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { systemClock } from '../src/core/clock.js';
import type { KubeObject } from '../src/core/object-meta.js';
import { ADMISSION_DEFAULTS } from '../src/dhcp/admission.js';
import { RESOURCES } from '../src/kube/resources.js';
import { readDhcpLeases } from '../src/kube/status-reader.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { Udhcpc } from '../src/lab/rig/dhcp-clients.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const RATE = Number(process.env.IRONET_FLOOD_RATE ?? 20_000);
const CLIENTS = Number(process.env.IRONET_FLOOD_CLIENTS ?? 100_000);
const SECONDS = Number(process.env.IRONET_FLOOD_SECONDS ?? 30);
const KNOWN = Number(process.env.IRONET_FLOOD_KNOWN ?? 8);
const TRAIL_S = 10;
const TIMINGS = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 };
const POOL_SPEC = { namePrefix: 'dhcp', pools: [{ start: '172.22.1.0', end: '172.22.255.254', subnet: '172.22.0.0/16' }], prefix: 16 };
const IMAGE_NODE_OPTIONS = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1] ?? '';
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: repoRoot, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}`);
}

/** The chart's memory limits, in MiB. */
function chartLimitsMiB(): { agent: number; controller: number } {
  const values = parseYaml(readFileSync(path.join(repoRoot, 'charts/ironet/values.yaml'), 'utf8')) as Record<string, { resources?: { limits?: { memory?: string } } }>;
  const mib = (v: string | undefined): number => {
    const m = /^(\d+)(Mi|Gi)$/.exec(v ?? '');
    if (!m) throw new Error(`cannot read a memory limit from ${JSON.stringify(v)}`);
    return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
  };
  return { agent: mib(values.agent?.resources?.limits?.memory), controller: mib(values.controller?.resources?.limits?.memory) };
}

/** Peak and current RSS of a process and its descendants' largest (ip netns exec execs node: the pid is node's), in MiB. */
function rssMiB(pid: number | undefined): { peak: number; now: number } {
  if (pid === undefined) return { peak: Number.NaN, now: Number.NaN };
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    return { peak: round(kb('VmHWM') / 1024), now: round(kb('VmRSS') / 1024) };
  } catch {
    return { peak: Number.NaN, now: Number.NaN };
  }
}

/** kube-apiserver's write requests so far (apiserver_request_total, write verbs), by resource. */
function apiWrites(lab: VipWorld): Map<string, number> {
  const a = lab.apiserver;
  const r = spawnSync('ip', ['netns', 'exec', lab.nodes[0]!, 'curl', '-sk', '-H', `Authorization: Bearer ${a.adminToken}`, `${a.server}/metrics`], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`cannot read kube-apiserver's metrics: ${r.stderr}`);
  const out = new Map<string, number>();
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? '';
    if (!WRITE_VERBS.has(verb)) continue;
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    out.set(resource, (out.get(resource) ?? 0) + Number(line.split(' ').at(-1)));
  }
  return out;
}

function diff(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const d: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) d[k || '(none)'] = v - (before.get(k) ?? 0);
  return d;
}

interface Exchange {
  sent: number;
  received: number;
}

function exchange(text: string, title: string): Exchange {
  const block = text.split(`***Statistics for: ${title}***`)[1]?.split('***')[0] ?? '';
  const num = (label: string): number => Number(new RegExp(`${label}: ([0-9.]+)`).exec(block)?.[1] ?? NaN);
  return { sent: num('sent packets'), received: num('received packets') };
}

function flood(lab: VipWorld): Promise<{ discoverOffer: Exchange; requestAck: Exchange }> {
  const args = ['netns', 'exec', lab.topology.provisioning, 'perfdhcp', '-4', '-l', 'provbr', '-r', String(RATE), '-p', String(SECONDS), '-R', String(CLIENTS), '-b', 'mac=02:fe:00:00:00:00', '-d', '1', '-W', '2000000', VIP];
  return new Promise((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', () => {
      const discoverOffer = exchange(out, 'DISCOVER-OFFER');
      if (Number.isNaN(discoverOffer.sent)) reject(new Error(`perfdhcp printed no statistics:\n${out}`));
      else resolve({ discoverOffer, requestAck: exchange(out, 'REQUEST-ACK') });
    });
  });
}

const round = (x: number): number => Math.round(x * 10) / 10;
const knownMac = (i: number): string => `52:54:00:aa:00:${(i + 1).toString(16).padStart(2, '0')}`;

async function metricValue(lab: VipWorld, name: string, labels: string): Promise<number> {
  const text = await lab.agents.metrics(0);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || (labels === '' && l.startsWith(`${name} `)));
  return Number(line?.split(' ').at(-1) ?? 0);
}

async function main(): Promise<void> {
  for (const tool of ['perfdhcp', 'busybox', 'curl']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is missing: run sh scripts/setup.sh`);
  }
  console.log('building dist/ (agent and controller run as in the image)…');
  sh('npm', ['run', 'build', '--silent']);
  process.env.NODE_OPTIONS = process.env.IRONET_BENCH_NODE_FLAGS ?? IMAGE_NODE_OPTIONS;
  const limits = chartLimitsMiB();
  const lab = await VipWorld.start({ clock: systemClock, nodes: 1, timings: TIMINGS, dhcp: { pool: POOL_SPEC, agentArgs: ['--dhcp-known-hosts', 'any'] }, ironet: ironetCommand('dist'), logDir: process.env.IRONET_BENCH_LOG });
  let controller: ChildProcess | undefined;
  const clients: Udhcpc[] = [];
  try {
    const admin = lab.admin;
    for (let i = 0; i < KNOWN; i++) {
      await admin.resource(RESOURCES.bareMetalHost).create({
        apiVersion: 'metal3.io/v1alpha1',
        kind: 'BareMetalHost',
        metadata: { name: `known-${i}`, namespace: lab.namespace },
        spec: { online: false, bootMACAddress: knownMac(i) },
      } as KubeObject);
    }
    const kubeconfig = await lab.cluster.writeKubeconfig(path.join(tmpdir(), `irn-${process.pid}-flood-controller.kubeconfig`));
    controller = spawn('ip', ['netns', 'exec', lab.nodes[0]!, ...ironetCommand('dist'), 'controller', '--kubeconfig', kubeconfig, '--namespace', lab.namespace, '--metrics-host', '127.0.0.1', '--metrics-port', '0', '--log-level', 'warn'], { stdio: 'ignore' });
    const since = systemClock.monotonicMs();
    lab.startAgent(0);
    if (!(await lab.vip.nextHolder(since, 30_000))) throw new Error('the agent did not take the VIP');
    await lab.agents.waitForLog(0, '"DHCP serving"', 30_000);
    await systemClock.sleep(3000);

    const before = apiWrites(lab);
    const t0 = systemClock.monotonicMs();
    const flooding = flood(lab);
    await systemClock.sleep(5000);
    const known: { mac: string; seconds: number | null }[] = [];
    const startedWallMs = Date.now();
    for (let i = 0; i < KNOWN; i++) clients.push(new Udhcpc(lab.topology.addClient(`k${i}`, knownMac(i))));
    await Promise.all(
      clients.map(async (c, i) => {
        try {
          await c.waitFor('bound', 0, Math.max(SECONDS - 5, 20) * 1000);
          known.push({ mac: knownMac(i), seconds: round((c.events.find((e) => e.kind === 'bound')!.atMs - startedWallMs) / 1000) });
        } catch {
          known.push({ mac: knownMac(i), seconds: null });
        }
      }),
    );
    const perf = await flooding;
    const floodSeconds = (systemClock.monotonicMs() - t0) / 1000;
    await systemClock.sleep(TRAIL_S * 1000);
    const writesBy = diff(apiWrites(lab), before);
    const writes = Object.values(writesBy).reduce((a, b) => a + b, 0);
    const agent = rssMiB(lab.agents.pid(0));
    const ctl = rssMiB(controller.pid);
    const leases = (await readDhcpLeases(admin, lab.namespace, 'dhcp')).size;
    const dropped: Record<string, number> = {};
    for (const reason of ['macRateLimited', 'queueFull', 'queueTimeout']) dropped[reason] = await metricValue(lab, 'ironet_dhcp_admission_dropped_total', `reason="${reason}"`);
    const admittedBound = ADMISSION_DEFAULTS.newLeasesBurst + ADMISSION_DEFAULTS.newLeasesPerSecond * (floodSeconds + TRAIL_S) + KNOWN;
    const writeBound = Math.round(4 * admittedBound + 4 * (floodSeconds + TRAIL_S));
    const bound = known.filter((k) => k.seconds !== null).map((k) => k.seconds!);
    const result = {
      flood: { askedRate: RATE, clients: CLIENTS, seconds: SECONDS, discoversSent: perf.discoverOffer.sent, sentRate: Math.round(perf.discoverOffer.sent / SECONDS), offers: perf.discoverOffer.received, acks: perf.requestAck.received },
      limits: { newLeasesPerSecond: ADMISSION_DEFAULTS.newLeasesPerSecond, newLeasesBurst: ADMISSION_DEFAULTS.newLeasesBurst, perMacPerSecond: ADMISSION_DEFAULTS.perMacPerSecond, queueLength: ADMISSION_DEFAULTS.queueLength },
      dropped,
      leasesInPool: leases,
      known: { clients: KNOWN, bound: bound.length, maxSeconds: bound.length ? Math.max(...bound) : null, seconds: known.map((k) => k.seconds) },
      apiWrites: { total: writes, bound: writeBound, byResource: writesBy },
      memoryMiB: { agent: { peak: agent.peak, limit: limits.agent }, controller: { peak: ctl.peak, limit: limits.controller } },
    };
    console.log(`\nflood: perfdhcp DORA from ${CLIENTS} random MACs, asked ${RATE}/s for ${SECONDS} s; sent ${result.flood.sentRate} DISCOVER/s (${perf.discoverOffer.sent}), ${result.flood.offers} offered, ${result.flood.acks} ACKed`);
    console.log(`limits (defaults): ${ADMISSION_DEFAULTS.newLeasesPerSecond} new leases/s, burst ${ADMISSION_DEFAULTS.newLeasesBurst}, ${ADMISSION_DEFAULTS.perMacPerSecond}/s per MAC, queue ${ADMISSION_DEFAULTS.queueLength}; dropped ${JSON.stringify(dropped)}; leases in the pool ${leases}`);
    console.log(`known clients (udhcpc, BareMetalHost boot MACs, started 5 s in): ${bound.length}/${KNOWN} bound, slowest ${result.known.maxSeconds ?? '—'} s`);
    console.log('');
    console.log('                      ours        limit');
    console.log(`API writes            ${String(writes).padEnd(11)} ${writeBound}   (flood + ${TRAIL_S} s; 4 per admitted lease + 4/s)`);
    console.log(`agent peak RSS        ${`${agent.peak} MiB`.padEnd(11)} ${limits.agent} MiB`);
    console.log(`controller peak RSS   ${`${ctl.peak} MiB`.padEnd(11)} ${limits.controller} MiB`);
    console.log(JSON.stringify(result));
  } finally {
    for (const c of clients) c.stop();
    if (controller?.pid && controller.exitCode === null) controller.kill('SIGTERM');
    await lab.stop();
  }
}

await main();
