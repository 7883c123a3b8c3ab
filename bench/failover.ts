/**
 * npm run bench:failover — how long clients lose the provisioning VIP, and for
 * how long two nodes hold it, when the holder stops gracefully or crashes:
 * ironet agents against keepalived (Debian's, as Metal3 ships it: VRRP,
 * advert_int 1; and tuned to advert_int 0.1), in the same run and topology.
 *
 * Topology (src/lab/world/vip-world.ts): three node namespaces and a client on a
 * provisioning bridge; a real kube-apiserver reachable over a second bridge.
 * Each node answers UDP probes with its own name; the client probes the VIP
 * every 10 ms. Takeover = fault → the VIP installed on another node (netlink
 * address events, the failover time). Outage = the longest gap between two
 * answers to the client from the fault to the restart (what clients notice; a
 * crashed keepalived leaves the VIP answering on its node, so its outage is
 * short while two nodes hold the VIP). Two-holder time comes from the same
 * address events.
 * A crashed instance is restarted 2 s after the failover, as a supervisor
 * would (keepalived leaves the VIP on a killed node until then).
 *
 * Last line: one JSON object, per setting: gracefulMedianMs and crashMedianMs
 * (takeover medians), gracefulOutageMedianMs, crashOutageMedianMs, and
 * dualHolderMs (max over all trials).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { systemClock } from '../src/core/clock.js';
import { median } from './stats.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const TRIALS = Number(process.env.IRONET_BENCH_TRIALS ?? 10);
const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const PORT = 7777;
const now = (): number => systemClock.monotonicMs();
const sleep = (ms: number): Promise<void> => systemClock.sleep(ms);

interface Answer {
  /** Which node answered. */
  node: string;
  atMs: number;
}
interface Trial {
  kind: 'graceful' | 'crash';
  takeoverMs: number;
  outageMs: number;
  dualHolderMs: number;
}

/** One HA implementation under test, on every node. */
interface Contender {
  readonly name: string;
  start(i: number): void;
  fault(i: number, kind: 'graceful' | 'crash'): Promise<void>;
  stopAll(): Promise<void>;
}



async function runTrials(lab: VipWorld, c: Contender, answers: Answer[]): Promise<Trial[]> {
  const trials: Trial[] = [];
  for (const kind of ['graceful', 'crash'] as const) {
    for (let t = 0; t < TRIALS; t++) {
      const h = await lab.vip.stableHolder(1500);
      const t0 = now();
      await c.fault(h, kind);
      const next = await lab.vip.nextHolder(t0, 15_000, h);
      if (!next) throw new Error(`${c.name}: no failover after ${kind} of node ${h}`);
      await sleep(2000);
      const restartAt = now();
      c.start(h); // the supervisor restarts it
      await lab.vip.stableHolder(2000);
      const dual = lab.vip.dualHolderMs(t0, now());
      // the client's view from the fault to the restart (a restarted keepalived may preempt: a separate event)
      const window = answers.filter((a) => a.atMs >= t0 - 50 && a.atMs <= restartAt);
      let outageMs = 0;
      for (let k = 1; k < window.length; k++) outageMs = Math.max(outageMs, window[k]!.atMs - window[k - 1]!.atMs);
      const takeoverMs = next.atMs - t0;
      trials.push({ kind, takeoverMs, outageMs, dualHolderMs: dual });
      process.stdout.write(`  ${c.name.padEnd(26)} ${kind.padEnd(9)} #${String(t + 1).padEnd(3)} takeover ${takeoverMs.toFixed(0).padStart(5)} ms, outage ${outageMs.toFixed(0).padStart(5)} ms, two holders ${dual.toFixed(0)} ms\n`);
    }
  }
  return trials;
}

function ironet(lab: VipWorld): Contender {
  return {
    name: 'ironet',
    start: (i) => {
      lab.startAgent(i);
    },
    fault: async (i, kind) => {
      lab.agents.signal(i, kind === 'graceful' ? 'SIGTERM' : 'SIGKILL');
      await lab.agents.exited(i);
    },
    stopAll: async () => {
      for (let i = 0; i < lab.nodes.length; i++) {
        lab.agents.signal(i, 'SIGTERM');
        await lab.agents.exited(i).catch(() => undefined);
      }
    },
  };
}

function keepalived(lab: VipWorld, advertInt: string): Contender {
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-keepalived-'));
  const procs = new Map<number, ChildProcess>();
  const conf = (i: number): string => {
    const file = path.join(dir, `node-${i}.conf`);
    // sub-second adverts need VRRPv3; VRRPv2 (Metal3's default) counts whole seconds
    const version = Number(advertInt) < 1 ? '  vrrp_version 3\n' : '';
    writeFileSync(
      file,
      `global_defs {\n  router_id node-${i}\n${version}}\nvrrp_instance VI_1 {\n  state BACKUP\n  interface prov0\n  virtual_router_id 1\n  priority 101\n  advert_int ${advertInt}\n  virtual_ipaddress {\n    ${VIP}/32 dev prov0\n  }\n}\n`,
    );
    return file;
  };
  const vrrpPid = (i: number): number | undefined => {
    try {
      return Number(readFileSync(path.join(dir, `vrrp-${i}.pid`), 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  };
  const kill = (pid: number | undefined, sig: NodeJS.Signals): void => {
    try {
      if (pid) process.kill(pid, sig);
    } catch {
      /* gone */
    }
  };
  return {
    name: `keepalived advert_int ${advertInt}`,
    start: (i) => {
      const child = spawn(
        'ip',
        ['netns', 'exec', lab.nodes[i]!, 'keepalived', '--dont-fork', '--vrrp', '--log-console', '-f', conf(i), '-p', path.join(dir, `main-${i}.pid`), '-r', path.join(dir, `vrrp-${i}.pid`)],
        { stdio: 'ignore' },
      );
      procs.set(i, child);
      process.once('exit', () => kill(child.pid, 'SIGKILL'));
    },
    fault: async (i, kind) => {
      const main = procs.get(i);
      const child = vrrpPid(i);
      if (kind === 'graceful') kill(main?.pid, 'SIGTERM');
      else {
        kill(child, 'SIGKILL'); // the VRRP process holds the VIP; kill it and its parent
        kill(main?.pid, 'SIGKILL');
      }
      await new Promise<void>((r) => (main && main.exitCode === null && main.signalCode === null ? main.once('exit', () => r()) : r()));
    },
    stopAll: async () => {
      for (const [i, p] of procs) {
        kill(p.pid, 'SIGTERM');
        await new Promise<void>((r) => (p.exitCode === null && p.signalCode === null ? p.once('exit', () => r()) : r()));
        kill(vrrpPid(i), 'SIGKILL');
      }
      // a killed keepalived leaves the VIP behind: clean the nodes for the next contender
      for (const ns of lab.nodes) spawnSync('ip', ['-n', ns, 'addr', 'del', `${VIP}/32`, 'dev', 'prov0'], { stdio: 'ignore' });
      procs.clear();
    },
  };
}

async function idleFootprint(lab: VipWorld): Promise<{ rssMb: number[]; cpuPercent: number[] }> {
  const pids = [...Array(lab.nodes.length).keys()].map((i) => lab.agents.pid(i)).filter((p): p is number => p !== undefined);
  const ticks = (pid: number): number => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]);
  };
  const before = pids.map(ticks);
  const windowMs = 10_000;
  await sleep(windowMs);
  const after = pids.map(ticks);
  const hz = 100;
  return {
    cpuPercent: pids.map((_, k) => Math.round(((after[k]! - before[k]!) / hz / (windowMs / 1000)) * 1000) / 10),
    rssMb: pids.map((pid) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024)),
  };
}

async function main(): Promise<void> {
  console.log('building dist/ (agents run as in the image)…');
  if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
  const lab = await VipWorld.start({ clock: systemClock, timings: TIMINGS, ironet: ironetCommand('dist') });
  const side: ChildProcess[] = [];
  const answers: Answer[] = [];
  try {
    for (let i = 0; i < lab.nodes.length; i++) {
      side.push(spawn('ip', ['netns', 'exec', lab.nodes[i]!, process.execPath, path.join(repoRoot, 'bench/udp-responder.mjs'), String(PORT), `node-${i}`], { stdio: 'ignore' }));
    }
    const prober = spawn('ip', ['netns', 'exec', lab.topology.provisioning, process.execPath, path.join(repoRoot, 'bench/udp-prober.mjs'), VIP, String(PORT), '10'], { stdio: ['ignore', 'pipe', 'ignore'] });
    side.push(prober);
    createInterface(prober.stdout).on('line', (l) => answers.push(JSON.parse(l) as Answer));

    const results: Record<string, Trial[]> = {};
    let footprint: Awaited<ReturnType<typeof idleFootprint>> | undefined;
    for (const make of [() => ironet(lab), () => keepalived(lab, '1'), () => keepalived(lab, '0.1')]) {
      const c = make();
      console.log(`\n${c.name}: ${TRIALS} graceful and ${TRIALS} crash failovers`);
      for (let i = 0; i < lab.nodes.length; i++) c.start(i);
      await lab.vip.stableHolder(2000);
      results[c.name] = await runTrials(lab, c, answers);
      if (c.name === 'ironet') footprint = await idleFootprint(lab);
      await c.stopAll();
      await sleep(500);
    }

    type Summary = { gracefulMedianMs: number; crashMedianMs: number; gracefulOutageMedianMs: number; crashOutageMedianMs: number; dualHolderMs: number };
    const summary: Record<string, Summary> = {};
    const fmt = (xs: number[]): string => `${Math.min(...xs).toFixed(0)}/${median(xs).toFixed(0)}/${Math.max(...xs).toFixed(0)}`.padEnd(18);
    console.log('\nVIP failover (ms; min/median/max over the trials)');
    console.log('setting                    graceful takeover  crash takeover    graceful outage   crash outage      two holders max');
    for (const [name, trials] of Object.entries(results)) {
      const pick = (kind: Trial['kind'], f: (t: Trial) => number): number[] => trials.filter((t) => t.kind === kind).map(f);
      const dual = Math.max(...trials.map((t) => t.dualHolderMs));
      console.log(
        `${name.padEnd(27)}${fmt(pick('graceful', (t) => t.takeoverMs))} ${fmt(pick('crash', (t) => t.takeoverMs))}${fmt(pick('graceful', (t) => t.outageMs))}${fmt(pick('crash', (t) => t.outageMs))}${dual.toFixed(0)}`,
      );
      summary[name] = {
        gracefulMedianMs: Math.round(median(pick('graceful', (t) => t.takeoverMs))),
        crashMedianMs: Math.round(median(pick('crash', (t) => t.takeoverMs))),
        gracefulOutageMedianMs: Math.round(median(pick('graceful', (t) => t.outageMs))),
        crashOutageMedianMs: Math.round(median(pick('crash', (t) => t.outageMs))),
        dualHolderMs: Math.round(dual),
      };
    }
    const i = summary.ironet!;
    for (const k of ['keepalived advert_int 1', 'keepalived advert_int 0.1']) {
      const o = summary[k]!;
      console.log(`ratio ironet / ${k}: graceful ${(i.gracefulMedianMs / o.gracefulMedianMs).toFixed(2)}, crash ${(i.crashMedianMs / o.crashMedianMs).toFixed(2)}`);
    }
    console.log(`timings: leaseDuration ${TIMINGS.leaseDurationMs} ms, renewDeadline ${TIMINGS.renewDeadlineMs} ms, retryPeriod ${TIMINGS.retryPeriodMs} ms`);
    if (footprint) console.log(`ironet agents at idle (10 s): RSS ${footprint.rssMb.join(', ')} MB; CPU ${footprint.cpuPercent.join(', ')} % of a core`);
    console.log(
      JSON.stringify({
        ironet: i,
        keepalivedAdvert1: summary['keepalived advert_int 1'],
        keepalivedAdvert01: summary['keepalived advert_int 0.1'],
        trials: TRIALS,
        timings: TIMINGS,
        agentIdleRssMb: footprint?.rssMb,
        agentIdleCpuPercent: footprint?.cpuPercent,
      }),
    );
  } finally {
    for (const p of side) if (p.pid && p.exitCode === null) p.kill('SIGTERM');
    await lab.stop();
  }
}

await main();
