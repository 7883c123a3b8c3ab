/**
 * npm run bench:dhcp — DORA throughput of the agent's DHCP server with every
 * lease written to the API server before its ACK, against Kea (memfile,
 * persist=true) and dnsmasq (--no-ping, lease file), driven the same way by
 * ISC perfdhcp in the same run and topology; then the same for DHCPv6
 * (Solicit-Advertise-Request-Reply): the agent's DHCPv6 server (ADR 0035)
 * against kea-dhcp6 (ADR 0039).
 *
 * Topology (src/lab/world/vip-world.ts): one node namespace on the provisioning
 * bridge, a real kube-apiserver + etcd reachable over a second bridge, and
 * perfdhcp on the bridge itself (172.22.0.100). perfdhcp acts as a relay
 * (giaddr = its address), so every server answers by unicast. For DHCPv6
 * perfdhcp runs on the link (`-6 -l provbr`): SOLICITs to ff02::1:2 from the
 * bridge's link-local, each client a DUID-LLT holding its own MAC (ironet keys
 * the lease by that MAC), replies by unicast to that link-local. Not relayed:
 * ironet's DHCPv6 server refuses relayed messages (ADR 0035), and both
 * servers are driven the same way.
 *
 * Each server climbs the same ladder of rates (new clients per second, one
 * full DORA or SARR each), IRONET_BENCH_PERIOD_S seconds per step (default 5), from a
 * clean state at every step (ironet: a fresh namespace and pool; Kea and
 * dnsmasq: a fresh lease file). A step holds when perfdhcp reaches ≥ 95 % of
 * the rate and both DISCOVER-OFFER and REQUEST-ACK (DHCPv6: SOLICIT-ADVERTISE
 * and REQUEST-REPLY) lose ≤ 0.1 % (perfdhcp's drop time: 1 s). A server's
 * ladder ends at its first failed step. Latency = the two exchanges' averages
 * added (one DORA / SARR), and the larger of the two maxima, at the highest
 * rate held.
 *
 * For ironet (both families), after each step the leases are read back from
 * the API server (the pool's lease blocks, ADR 0011): every lease perfdhcp saw
 * ACKed (DHCPv6: a REPLY for) must be there. The agent runs with its new-lease limits (ADR 0030) lifted: perfdhcp's
 * clients are unknown MACs, and this measures what the server can do, not what
 * a site lets strangers cost (that is bench:flood's).
 *
 * Diagnostics: IRONET_BENCH_PROFILE=<dir> writes the agent's CPU profile,
 * IRONET_BENCH_APIPROF=<dir> one of kube-apiserver per step (its --profiling
 * is on for that run), IRONET_BENCH_LOG=<dir> the agents' logs.
 *
 * IRONET_BENCH_ONLY picks contenders (default all five: ironet, kea,
 * dnsmasq, then ironet6, kea6); e.g. IRONET_BENCH_ONLY=ironet6,kea6 runs
 * the DHCPv6 half alone.
 *
 * Last line: one JSON object {ironet, kea, dnsmasq, ironet6, kea6} (those
 * run), each {maxRate, avgLatencyMs, maxLatencyMs}, plus the steps (DHCPv4:
 * discoverOffer/requestAck; DHCPv6: solicitAdvertise/requestReply).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { systemClock } from '../src/core/clock.js';
import { DHCP_LEASE_LABEL } from '../src/ipam/objects.js';
import type { KubeObject } from '../src/core/object-meta.js';
import { RESOURCES } from '../src/kube/resources.js';
import { readDhcpLeases } from '../src/kube/status-reader.js';
import { ip } from '../src/lab/rig/netns-set.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
/** One ladder for every contender; 50 and 100 for ironet's DHCPv6 server, which answers one request at a time (ADR 0039). */
const RATES = (process.env.IRONET_BENCH_RATES ?? '50,100,250,500,1000,1500,2000,3000,4000,6000').split(',').map(Number);
const PERIOD_S = Number(process.env.IRONET_BENCH_PERIOD_S ?? 5);
const CONTENDERS = ['ironet', 'kea', 'dnsmasq', 'ironet6', 'kea6'] as const;
const ONLY = (process.env.IRONET_BENCH_ONLY ?? CONTENDERS.join(',')).split(',');
const API_PROFILE_DIR = process.env.IRONET_BENCH_APIPROF;
/** Every MAC answered and no new-lease limit below the ladder's top rate: the server's capacity, not the site's policy. */
const UNLIMITED = ['--dhcp-known-hosts', 'any', '--dhcp-new-lease-rate', '100000', '--dhcp-new-lease-burst', '1000000', '--dhcp-queue-length', '100000', '--dhcp-tracked-macs', '1000000'];
const TIMINGS = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 };
const POOL_SPEC = { namePrefix: 'dhcp', pools: [{ start: '172.22.1.0', end: '172.22.255.254', subnet: '172.22.0.0/16' }], prefix: 16 };
/** DHCPv6: the IPv6 VIP (outside the pool) and the pool, 16 M addresses of one /64 (Kea's pool is the same range). */
const VIP6 = 'fd00:22::2';
const POOL6_START = 'fd00:22::1:0';
const POOL6_END = 'fd00:22::ff:ffff';
const SUBNET6 = 'fd00:22::/64';
const POOL6_SPEC = { namePrefix: 'dhcp6', pools: [{ start: POOL6_START, end: POOL6_END, subnet: SUBNET6 }], prefix: 64 };
const MAX_DROP_PERCENT = 0.1;
const IMAGE_NODE_OPTIONS = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1] ?? '';

interface Exchange {
  sent: number;
  received: number;
  dropPercent: number;
  avgMs: number;
  maxMs: number;
  /** Answers perfdhcp counted as received but without the address it asked for (e.g. NoAddrsAvail). */
  rejectedLeases: number;
}
type Family = 4 | 6;
/** perfdhcp's two exchanges per family, its statistics titles, and their names in the step lines and the JSON. */
const EXCHANGES = {
  4: { offer: { title: 'DISCOVER-OFFER', short: 'DO', key: 'discoverOffer' }, bind: { title: 'REQUEST-ACK', short: 'RA', key: 'requestAck' }, unit: 'DORA/s' },
  6: { offer: { title: 'SOLICIT-ADVERTISE', short: 'SA', key: 'solicitAdvertise' }, bind: { title: 'REQUEST-REPLY', short: 'RR', key: 'requestReply' }, unit: 'SARR/s' },
} as const;

interface Step {
  rate: number;
  achieved: number;
  /** DISCOVER-OFFER or SOLICIT-ADVERTISE. */
  offer: Exchange;
  /** REQUEST-ACK or REQUEST-REPLY. */
  bind: Exchange;
  held: boolean;
  /** ironet only: ACKed (REPLY-bound) leases perfdhcp saw vs leases in the API server afterwards. */
  durable?: { acked: number; inPool: number };
  /** ironet only: seconds from the end of the step until every lease's IPAddress object existed. */
  objectsTrailSeconds?: number;
}
interface Result {
  family: Family;
  maxRate: number;
  avgLatencyMs: number | null;
  maxLatencyMs: number | null;
  steps: Step[];
}

/** One DHCP server under test, in node 0's namespace. */
interface Contender {
  readonly name: string;
  readonly family: Family;
  /** Starts from a clean state for a step at `rate`. */
  start(rate: number): Promise<void>;
  /** After a step: anything to verify or record. */
  check?(step: Step): Promise<void>;
  stop(): Promise<void>;
}

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: repoRoot, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}`);
}

function exchange(text: string, title: string): Exchange {
  const block = text.split(`***Statistics for: ${title}***`)[1]?.split('***')[0] ?? '';
  const num = (label: string): number => Number(new RegExp(`${label}: ([0-9.]+)`).exec(block)?.[1] ?? NaN);
  return { sent: num('sent packets'), received: num('received packets'), dropPercent: num('drops ratio'), avgMs: num('avg delay'), maxMs: num('max delay'), rejectedLeases: num('rejected leases') };
}

/**
 * Runs perfdhcp from the bridge namespace at `rate` new clients/s; each step uses its own MACs
 * (DHCPv6: its own DUID-LLTs, each holding one of those MACs).
 */
function perfdhcp(lab: VipWorld, family: Family, rate: number, step: number): Promise<Omit<Step, 'held' | 'durable'>> {
  const base = `mac=02:${step.toString(16).padStart(2, '0')}:00:00:00:00`;
  if (API_PROFILE_DIR) {
    // a CPU profile of kube-apiserver over the step (go tool pprof -top <file>), fetched from a node namespace
    const a = lab.apiserver;
    spawn('ip', ['netns', 'exec', lab.nodes[0]!, 'curl', '-sk', '-H', `Authorization: Bearer ${a.adminToken}`, `${a.server}/debug/pprof/profile?seconds=${PERIOD_S}`, '-o', path.join(API_PROFILE_DIR, `kube-apiserver-${rate}.prof`)], { stdio: 'ignore' });
  }
  const common = ['-l', 'provbr', '-r', String(rate), '-p', String(PERIOD_S), '-R', '1000000', '-b', base, '-d', '1', '-W', '2000000'];
  // DHCPv4: as a relay to the VIP; DHCPv6: on the link, to ff02::1:2 (perfdhcp's default with -l)
  const args = ['netns', 'exec', lab.topology.provisioning, 'perfdhcp', ...(family === 4 ? ['-4', ...common, VIP] : ['-6', ...common])];
  const names = EXCHANGES[family];
  return new Promise((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', () => {
      const offer = exchange(out, names.offer.title);
      // perfdhcp's own "Rate:" divides by the run including its exit wait: count what it sent instead
      const achieved = offer.sent / PERIOD_S;
      const bind = exchange(out, names.bind.title);
      if (Number.isNaN(offer.sent)) reject(new Error(`perfdhcp printed no statistics:\n${out}`));
      else resolve({ rate, achieved, offer, bind });
    });
  });
}

function held(s: Omit<Step, 'held'>): boolean {
  const ok = (e: Exchange): boolean => e.sent > 0 && e.dropPercent <= MAX_DROP_PERCENT;
  return s.achieved >= 0.95 * s.rate && ok(s.offer) && ok(s.bind);
}

async function ladder(lab: VipWorld, c: Contender, firstStep: number): Promise<Result> {
  const steps: Step[] = [];
  for (const [i, rate] of RATES.entries()) {
    await c.start(rate);
    let step: Step;
    try {
      const raw = await perfdhcp(lab, c.family, rate, firstStep + i);
      step = { ...raw, held: held(raw) };
      await c.check?.(step);
      if (step.durable && step.durable.inPool < step.durable.acked) step.held = false;
    } finally {
      await c.stop();
    }
    steps.push(step);
    const d = step.durable ? `  durable ${step.durable.inPool}/${step.durable.acked}, objects +${step.objectsTrailSeconds} s` : '';
    const names = EXCHANGES[c.family];
    const ex = (short: string, e: Exchange): string => `${short} drops ${e.dropPercent.toFixed(3)}% avg ${e.avgMs.toFixed(2)} max ${e.maxMs.toFixed(1)} ms${e.rejectedLeases > 0 ? ` rejected ${e.rejectedLeases}` : ''}  `;
    console.log(
      `${c.name.padEnd(8)} ${String(rate).padStart(5)}/s  achieved ${step.achieved.toFixed(0).padStart(5)}/s  ` +
        `${ex(names.offer.short, step.offer)}${ex(names.bind.short, step.bind).trimEnd()}${d}  ${step.held ? 'held' : 'FAILED'}`,
    );
    if (!step.held) break;
  }
  const best = steps.filter((s) => s.held).at(-1);
  return {
    family: c.family,
    maxRate: best?.rate ?? 0,
    avgLatencyMs: best ? round(best.offer.avgMs + best.bind.avgMs) : null,
    maxLatencyMs: best ? round(Math.max(best.offer.maxMs, best.bind.maxMs)) : null,
    steps,
  };
}

/** A result as the last line prints it: each step's exchanges under their family's names. */
function resultJson(r: Result): Record<string, unknown> {
  const names = EXCHANGES[r.family];
  return {
    ...r,
    steps: r.steps.map(({ offer, bind, ...rest }) => ({ ...rest, [names.offer.key]: offer, [names.bind.key]: bind })),
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * ironet's agent on node 0: a fresh namespace + pool per step, the agent restarted on it.
 * DHCPv6: the same agent with the IPv6 VIP and --dhcp6-pool (DHCPv4 off), its Router
 * Advertisements off (they are not what is measured; a site's router may send them).
 */
function ironet(lab: VipWorld, family: Family): Contender {
  let ns = '';
  let n = 0;
  const rules = parseYaml(readFileSync(path.join(repoRoot, 'charts/ironet/rbac/agent-rules.yaml'), 'utf8')) as object[];
  const pool = family === 4 ? 'dhcp' : 'dhcp6';
  return {
    name: family === 4 ? 'ironet' : 'ironet6',
    family,
    async start() {
      const admin = lab.admin;
      ns = `bench-dhcp${family === 6 ? '6' : ''}-${process.pid}-${n++}`;
      await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
      await admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-agent', namespace: ns }, rules } as KubeObject);
      await admin.resource(RESOURCES.roleBinding).create({
        metadata: { name: 'agent-0', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ironet-agent' },
        subjects: [{ kind: 'ServiceAccount', name: 'agent-0', namespace: lab.namespace }],
      } as KubeObject);
      await admin.resource(RESOURCES.ipPool).create({ metadata: { name: pool, namespace: ns }, spec: family === 4 ? POOL_SPEC : POOL6_SPEC } as KubeObject);
      if (family === 6) {
        // the IPv6 VIP's own Lease; the world's DHCPv4 pool flag emptied (an empty --dhcp-pool is DHCPv4 off)
        lab.startAgent(0, ['--vip', VIP6, '--dhcp-pool', '', '--dhcp6-pool', `${ns}/${pool}`, '--dhcp6-router-advertisements', 'false']);
        await lab.agents.waitForLog(0, '"DHCPv6 serving"', 30_000);
        return;
      }
      const since = systemClock.monotonicMs();
      lab.startAgent(0, ['--dhcp-pool', `${ns}/${pool}`]);
      if (!(await lab.vip.nextHolder(since, 30_000))) throw new Error('the agent did not take the VIP');
      await lab.agents.waitForLog(0, '"DHCP serving"', 30_000);
    },
    async check(step) {
      const inPool = (await readDhcpLeases(lab.admin, ns, pool)).size;
      step.durable = { acked: step.bind.received, inPool };
      // not timed against anyone: how long the lease objects (MAC, hostname, expiry) trail the burst
      const t0 = systemClock.monotonicMs();
      for (;;) {
        const n = (await lab.admin.resource(RESOURCES.ipAddress).list(ns, { labelSelector: `${DHCP_LEASE_LABEL}=true` })).items.length;
        if (n >= inPool) break;
        if (systemClock.monotonicMs() - t0 > 300_000) throw new Error(`only ${n} of ${inPool} lease IPAddresses after 300 s`);
        await systemClock.sleep(1000);
      }
      step.objectsTrailSeconds = round((systemClock.monotonicMs() - t0) / 1000);
    },
    async stop() {
      lab.agents.signal(0, 'SIGTERM');
      await lab.agents.exited(0, 30_000);
    },
  };
}

/** Kea 2.x, memfile with persist=true (an append per lease), lease file cleanup off, single-threaded as Debian ships it. */
function kea(lab: VipWorld, dir: string): Contender {
  let child: ReturnType<typeof spawn> | undefined;
  return {
    name: 'kea',
    family: 4,
    async start() {
      const leases = path.join(dir, 'kea-leases.csv');
      rmSync(leases, { force: true });
      const config = {
        Dhcp4: {
          'interfaces-config': { interfaces: ['prov0'] },
          'lease-database': { type: 'memfile', persist: true, name: leases, 'lfc-interval': 0 },
          'valid-lifetime': 3600,
          subnet4: [{ id: 1, subnet: '172.22.0.0/16', pools: [{ pool: '172.22.1.0 - 172.22.255.254' }] }],
          loggers: [{ name: 'kea-dhcp4', severity: 'WARN', output_options: [{ output: 'stdout' }] }],
        },
      };
      const file = path.join(dir, 'kea.json');
      writeFileSync(file, JSON.stringify(config));
      child = spawn('ip', ['netns', 'exec', lab.nodes[0]!, 'kea-dhcp4', '-c', file], {
        env: { ...process.env, KEA_PIDFILE_DIR: dir, KEA_LOCKFILE_DIR: dir },
        stdio: 'ignore',
      });
      await systemClock.sleep(1500);
      if (child.exitCode !== null) throw new Error(`kea-dhcp4 exited ${child.exitCode}`);
    },
    async stop() {
      await stopChild(child);
    },
  };
}

/**
 * kea-dhcp6 2.x as kea() runs kea-dhcp4: memfile with persist=true, lease file cleanup off, single-threaded;
 * the subnet bound to prov0 (clients on the link), its server DUID kept in the run's folder.
 */
function kea6(lab: VipWorld, dir: string): Contender {
  let child: ReturnType<typeof spawn> | undefined;
  return {
    name: 'kea6',
    family: 6,
    async start() {
      const leases = path.join(dir, 'kea6-leases.csv');
      rmSync(leases, { force: true });
      const config = {
        Dhcp6: {
          'interfaces-config': { interfaces: ['prov0'] },
          'data-directory': dir,
          'lease-database': { type: 'memfile', persist: true, name: leases, 'lfc-interval': 0 },
          'preferred-lifetime': 3600,
          'valid-lifetime': 3600,
          subnet6: [{ id: 1, subnet: SUBNET6, interface: 'prov0', pools: [{ pool: `${POOL6_START} - ${POOL6_END}` }] }],
          loggers: [{ name: 'kea-dhcp6', severity: 'WARN', output_options: [{ output: 'stdout' }] }],
        },
      };
      const file = path.join(dir, 'kea6.json');
      writeFileSync(file, JSON.stringify(config));
      child = spawn('ip', ['netns', 'exec', lab.nodes[0]!, 'kea-dhcp6', '-c', file], {
        env: { ...process.env, KEA_PIDFILE_DIR: dir, KEA_LOCKFILE_DIR: dir },
        stdio: 'ignore',
      });
      await systemClock.sleep(1500);
      if (child.exitCode !== null) throw new Error(`kea-dhcp6 exited ${child.exitCode}`);
    },
    async stop() {
      await stopChild(child);
    },
  };
}

/** dnsmasq as Ironic runs it for DHCP (no DNS), with --no-ping and a lease file. */
function dnsmasq(lab: VipWorld, dir: string): Contender {
  let child: ReturnType<typeof spawn> | undefined;
  return {
    name: 'dnsmasq',
    family: 4,
    async start() {
      const leases = path.join(dir, 'dnsmasq.leases');
      rmSync(leases, { force: true });
      child = spawn(
        'ip',
        [
          'netns', 'exec', lab.nodes[0]!, 'dnsmasq', '--no-daemon', '--port=0', '--interface=prov0', '--bind-interfaces',
          '--dhcp-range=172.22.1.0,172.22.255.254,255.255.0.0,1h', `--dhcp-leasefile=${leases}`, '--no-ping',
          '--dhcp-authoritative', '--dhcp-lease-max=1000000', '--log-facility=/dev/null', `--pid-file=${path.join(dir, 'dnsmasq.pid')}`,
          '--conf-file=/dev/null', '--user=root',
        ],
        { stdio: 'ignore' },
      );
      await systemClock.sleep(1000);
      if (child.exitCode !== null) throw new Error(`dnsmasq exited ${child.exitCode}`);
    },
    async stop() {
      await stopChild(child);
    },
  };
}

async function stopChild(child: ReturnType<typeof spawn> | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, systemClock.sleep(10_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

async function main(): Promise<void> {
  const unknown = ONLY.filter((name) => !(CONTENDERS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`IRONET_BENCH_ONLY: ${unknown.join(', ')} unknown; pick from ${CONTENDERS.join(', ')}`);
  const tools: Record<string, string> = { perfdhcp: 'kea-admin', 'kea-dhcp4': 'kea-dhcp4-server', dnsmasq: 'dnsmasq-base', 'kea-dhcp6': 'kea-dhcp6-server' };
  const needed = ['perfdhcp', ...(ONLY.includes('kea') ? ['kea-dhcp4'] : []), ...(ONLY.includes('dnsmasq') ? ['dnsmasq'] : []), ...(ONLY.includes('kea6') ? ['kea-dhcp6'] : [])];
  for (const tool of needed) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is missing: run sh scripts/setup.sh (or apt-get install -y --no-install-recommends ${tools[tool]})`);
  }
  console.log('building dist/ (the agent runs as in the image)…');
  sh('npm', ['run', 'build', '--silent']);
  process.env.NODE_OPTIONS = process.env.IRONET_BENCH_NODE_FLAGS ?? IMAGE_NODE_OPTIONS;
  const dir = mkdtempSync(path.join(tmpdir(), 'ironet-bench-dhcp-'));
  const nodeArgs = process.env.IRONET_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.IRONET_BENCH_PROFILE}`] : [];
  const lab = await VipWorld.start({ clock: systemClock, nodes: 1, timings: TIMINGS, dhcp: { pool: POOL_SPEC, agentArgs: UNLIMITED }, ironet: ironetCommand('dist', nodeArgs), apiServerArgs: API_PROFILE_DIR ? ['--profiling=true'] : [], logDir: process.env.IRONET_BENCH_LOG });
  const results: Record<string, Result> = {};
  try {
    // Kea and dnsmasq answer from the VIP too (their server identifier), as Ironic's dnsmasq does
    const all = [ironet(lab, 4), kea(lab, dir), dnsmasq(lab, dir), ironet(lab, 6), kea6(lab, dir)];
    const contenders = all.filter((c) => ONLY.includes(c.name));
    let vipAdded = false;
    for (const c of contenders) {
      const i = all.indexOf(c);
      if ((c.name === 'kea' || c.name === 'dnsmasq') && !vipAdded) {
        ip('-n', lab.nodes[0]!, 'addr', 'add', `${VIP}/32`, 'dev', 'prov0');
        vipAdded = true;
      }
      results[c.name] = await ladder(lab, c, i * 16);
    }
  } finally {
    await lab.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nperiod ${PERIOD_S} s per step; a step holds at ≥ 95 % of the rate and ≤ ${MAX_DROP_PERCENT} % drops`);
  for (const [name, r] of Object.entries(results)) {
    console.log(`${name.padEnd(8)} max ${String(r.maxRate).padStart(5)} ${EXCHANGES[r.family].unit}  avg ${r.avgLatencyMs ?? '—'} ms  max ${r.maxLatencyMs ?? '—'} ms`);
  }
  console.log(JSON.stringify({ periodSeconds: PERIOD_S, ...Object.fromEntries(Object.entries(results).map(([name, r]) => [name, resultJson(r)])) }));
}

await main();
