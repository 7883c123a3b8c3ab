/**
 * npm run bench:agent-idle — the footprint of idle `ironet agent`s (one holder,
 * two followers) with the default timings, over 30 s: RSS and CPU per agent,
 * read from /proc. Anchor, in the same topology and window: keepalived
 * (advert_int 1, as Metal3 ships it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const WINDOW_MS = 30_000;
const HZ = 100;

function ticks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}
function rssMb(pid: number): number {
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
}
async function footprint(pids: number[]): Promise<{ rssMb: number[]; cpuPercent: number[] }> {
  const before = pids.map(ticks);
  await systemClock.sleep(WINDOW_MS);
  const after = pids.map(ticks);
  return {
    rssMb: pids.map(rssMb),
    cpuPercent: pids.map((_, k) => Math.round(((after[k]! - before[k]!) / HZ / (WINDOW_MS / 1000)) * 1000) / 10),
  };
}

async function main(): Promise<void> {
  if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
  const lab = await VipWorld.start({ clock: systemClock, timings: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 }, ironet: ironetCommand('dist') });
  try {
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    await lab.vip.nextHolder(0, 20_000);
    await systemClock.sleep(5000);
    const holder = (await lab.vip.holdersNow())[0];
    const ironet = await footprint([0, 1, 2].map((i) => lab.agents.pid(i)!));
    for (let i = 0; i < lab.nodes.length; i++) lab.agents.signal(i, 'SIGTERM');
    for (let i = 0; i < lab.nodes.length; i++) await lab.agents.exited(i);

    const dir = mkdtempSync(path.join(tmpdir(), 'irn-ka-'));
    const kas = lab.nodes.map((ns, i) => {
      const conf = path.join(dir, `${i}.conf`);
      writeFileSync(conf, `vrrp_instance VI_1 {\n  state BACKUP\n  interface prov0\n  virtual_router_id 1\n  priority 101\n  advert_int 1\n  virtual_ipaddress {\n    ${VIP}/32 dev prov0\n  }\n}\n`);
      return spawn('ip', ['netns', 'exec', ns, 'keepalived', '--dont-fork', '--vrrp', '-f', conf, '-p', path.join(dir, `m${i}.pid`), '-r', path.join(dir, `v${i}.pid`)], { stdio: 'ignore' });
    });
    await systemClock.sleep(5000);
    const kaPids = kas.flatMap((k, i) => [k.pid!, Number(readFileSync(path.join(dir, `v${i}.pid`), 'utf8').trim())]);
    const ka = await footprint(kaPids);
    for (const k of kas) k.kill('SIGTERM');
    await systemClock.sleep(1000);

    console.log(`\nidle footprint over ${WINDOW_MS / 1000} s (leaseDuration 3000, renewDeadline 2000, retryPeriod 500)`);
    console.log(`ironet agents (holder: node ${holder}): RSS ${ironet.rssMb.join(', ')} MB; CPU ${ironet.cpuPercent.join(', ')} % of a core`);
    console.log(`anchor keepalived advert_int 1 (main + VRRP process per node): RSS ${ka.rssMb.join(', ')} MB; CPU ${ka.cpuPercent.join(', ')} %`);
    console.log(JSON.stringify({ agentRssMb: ironet.rssMb, agentCpuPercent: ironet.cpuPercent, holderNode: holder, keepalivedRssMb: ka.rssMb, keepalivedCpuPercent: ka.cpuPercent }));
  } finally {
    await lab.stop();
  }
}

await main();
