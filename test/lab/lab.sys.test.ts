/**
 * `ironet lab`, run as a user runs it (its own process, as root): the smoke
 * scenario ends in `ok: true` with every PXE client at boot.ipxe and no two
 * VIP holders; the interactive lab obeys its keys (add a host, kill the VIP
 * holder's agent, pause and resume the API server, quit) and removes
 * everything on quit; a lab killed with SIGKILL leaves no process running and
 * the next run sweeps its namespaces.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { ip, requireRoot } from '../../src/lab/rig/netns-set.js';
import { requirePxeTools } from '../../src/lab/rig/qemu.js';
import type { IronicResult, SmokeResult } from '../../src/lab/timeline.js';
import { spawnIronet } from '../support/processes.js';

interface Lab {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | string>;
  /** The first line matching `pattern` from line `from` on (default: all lines). */
  waitFor(pattern: RegExp, timeoutMs: number, from?: number): Promise<string>;
  /** Sends one key (a line on stdin); returns the number of lines printed before it. */
  send(key: string): number;
}

const started: Lab[] = [];

function startLab(args: string[]): Lab {
  const { child, exited } = spawnIronet(['lab', ...args], { stdin: 'pipe', ownProcessGroup: true });
  const lines: string[] = [];
  createInterface(child.stdout!).on('line', (l) => lines.push(l));
  createInterface(child.stderr!).on('line', (l) => lines.push(`stderr: ${l}`));
  const lab: Lab = {
    child,
    lines,
    exited,
    send: (key) => {
      const mark = lines.length;
      child.stdin!.write(`${key}\n`);
      return mark;
    },
    waitFor: async (pattern, timeoutMs, from = 0) => {
      const deadline = systemClock.monotonicMs() + timeoutMs;
      let seen = from;
      for (;;) {
        const hit = lines.slice(seen).find((l) => pattern.test(l));
        if (hit) return hit;
        seen = Math.max(seen, lines.length - 1);
        if (child.exitCode !== null || child.signalCode !== null || systemClock.monotonicMs() > deadline) {
          throw new Error(`the lab did not print ${String(pattern)} (${child.exitCode !== null ? `exited ${child.exitCode}` : `within ${timeoutMs} ms`}); its output:\n${lines.slice(-40).join('\n')}`);
        }
        await systemClock.sleep(100);
      }
    },
  };
  started.push(lab);
  return lab;
}

/** Namespaces made by process `pid` (ironet names them irn<pid>-…). */
const namespacesOf = (pid: number): string[] => (existsSync('/var/run/netns') ? readdirSync('/var/run/netns').filter((n) => n.startsWith(`irn${pid}-`)) : []);
/** Processes inside any of `namespaces`. */
const processesIn = (namespaces: string[]): string[] => namespaces.flatMap((n) => ip('netns', 'pids', n).split('\n').filter(Boolean));

/** A scenario's verdict: the last line of stdout, one JSON object. */
function lastJson<T>(lines: readonly string[]): T {
  const last = lines.filter((l) => !l.startsWith('stderr: ')).pop() ?? '';
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(`the last line is not JSON; the lab printed:\n${lines.join('\n')}`);
  }
}

describe('ironet lab (system)', function () {
  this.timeout(10 * 60_000);
  let crashed: string[] = [];

  before(() => {
    requireRoot();
    requirePxeTools();
  });

  // a lab a failed test left running is stopped as a user would (Ctrl-C), then killed: it must not outlive its test
  afterEach(async () => {
    for (const lab of started.splice(0)) {
      if (lab.child.exitCode !== null || lab.child.signalCode !== null) continue;
      lab.child.kill('SIGINT');
      const timer = setTimeout(() => lab.child.kill('SIGKILL'), 30_000);
      await lab.exited;
      clearTimeout(timer);
    }
  });

  it('a lab killed with SIGKILL leaves no process behind (parent-death signals); its namespaces wait for the next run', async () => {
    const lab = startLab(['--plain', '--clients', '1']);
    await lab.waitFor(/lab ready in/, 180_000);
    await lab.waitFor(/host-0 \(52:54:00:1a:b0:00\) powered on/, 10_000);
    const pid = lab.child.pid!;
    crashed = namespacesOf(pid);
    expect(crashed.length, 'the lab made its namespaces').to.be.at.least(8);
    expect(processesIn(crashed).length, 'agents, API server, sandboxes, httpd and QEMU run in them').to.be.at.least(10);
    lab.child.kill('SIGKILL');
    await lab.exited;
    let left: string[] = [];
    for (let i = 0; i < 50; i++) {
      left = processesIn(crashed);
      if (left.length === 0) break;
      await systemClock.sleep(100);
    }
    expect(left, 'processes still running in the killed lab\'s namespaces').to.deep.equal([]);
  });

  it('--scenario smoke: two PXE boots, SIGKILL of the VIP holder, a third boot through the new holder; ok, one holder at a time, nothing left', async () => {
    const lab = startLab(['--scenario', 'smoke']);
    const code = await lab.exited;
    const result = lastJson<SmokeResult>(lab.lines);
    expect(result.problems, lab.lines.join('\n')).to.deep.equal([]);
    expect(result.ok).to.equal(true);
    expect(code).to.equal(0);
    expect(result.dualHolderMs).to.equal(0);
    expect(Object.keys(result.pxeBootSeconds)).to.deep.equal(['host-0', 'host-1', 'host-2']);
    for (const s of Object.values(result.pxeBootSeconds)) expect(s).to.be.a('number').above(0);
    expect(result.failoverMs).to.be.a('number').above(0).and.below(20_000);
    expect(result.newHolder).to.be.a('string').and.not.equal(result.killedHolder);
    expect(result.setupSeconds).to.be.above(0);
    expect(result.leftovers).to.deep.equal([]);
    // the timeline came first, in order
    const text = lab.lines.join('\n');
    expect(text).to.match(/lab ready in[\s\S]*host-0: boot\.ipxe from[\s\S]*SIGKILL the agent[\s\S]*failover:[\s\S]*host-2: boot\.ipxe from[\s\S]*nothing left behind/);
    expect(namespacesOf(lab.child.pid!)).to.deep.equal([]);
    // the run swept what the SIGKILLed lab had left
    expect(crashed.filter((n) => existsSync(`/var/run/netns/${n}`)), 'namespaces of the killed lab').to.deep.equal([]);
  });

  it('--scenario ironic: BMO registers Redfish hosts in the real Ironic on the VIP, Ironic powers them on, a BIOS and a UEFI machine boot to its deploy kernel; after the holder\'s SIGKILL a fresh Ironic in the new holder boots the third; ok, nothing left', async function () {
    this.timeout(20 * 60_000); // a cold install of Ironic and a cold build of BMO when setup did not make them
    const lab = startLab(['--scenario', 'ironic']);
    const code = await lab.exited;
    const result = lastJson<IronicResult>(lab.lines);
    expect(result.problems, lab.lines.join('\n')).to.deep.equal([]);
    expect(result.ok).to.equal(true);
    expect(code).to.equal(0);
    expect(result.ironicRegistered).to.equal(true);
    expect(result.kernelRequestedVia).to.equal('172.22.0.2');
    expect(result.dualHolderMs).to.equal(0);
    expect(Object.keys(result.pxeBootSeconds)).to.deep.equal(['bios-0', 'uefi-0', 'bios-1']);
    for (const s of Object.values(result.pxeBootSeconds)) expect(s).to.be.a('number').above(0);
    expect(result.failoverMs).to.be.a('number').above(0).and.below(20_000);
    expect(result.newHolder).to.be.a('string').and.not.equal(result.killedHolder);
    expect(result.leftovers).to.deep.equal([]);
    const text = lab.lines.join('\n');
    expect(text).to.match(/Ironic 39\.0\.0 started in ironic-\d on the VIP[\s\S]*BMO registered bios-0 in Ironic through the VIP[\s\S]*bios-0: powered on through its Redfish BMC[\s\S]*uefi-0: leased[\s\S]*SIGKILL the agent[\s\S]*failover:[\s\S]*Ironic 39\.0\.0 started in[\s\S]*bios-1: leased[\s\S]*nothing left behind/);
    expect(namespacesOf(lab.child.pid!)).to.deep.equal([]);
  });

  it('Ctrl-C (SIGINT) during the bring-up stops it and removes everything', async () => {
    const lab = startLab(['--plain', '--clients', '0']);
    await lab.waitFor(/started etcd and kube-apiserver/, 120_000);
    // as a terminal sends it: to the whole process group (the lab's children have groups of their own)
    process.kill(-lab.child.pid!, 'SIGINT');
    expect(await lab.exited).to.equal(0);
    expect(lab.lines.join('\n')).to.contain('nothing left behind (no namespace, no process)');
    expect(lab.lines.join('\n')).to.not.match(/lab ready in/);
    expect(namespacesOf(lab.child.pid!)).to.deep.equal([]);
  });

  it('the interactive lab (--plain, keys on stdin): add a host, kill the VIP holder\'s agent, pause and resume the API server, quit', async () => {
    const lab = startLab(['--plain', '--clients', '0']);
    await lab.waitFor(/lab ready in/, 180_000);
    await lab.waitFor(/^keys: k kill/, 5_000);

    let mark = lab.send('h');
    await lab.waitFor(/created BareMetalHost added-0 \(52:54:00:1a:b2:00\)/, 10_000, mark);
    await lab.waitFor(/added-0: boot\.ipxe from ironic-\d via the VIP/, 240_000, mark);

    mark = lab.send('k');
    const killed = await lab.waitFor(/SIGKILL the agent on node-\d/, 10_000, mark);
    const node = /node-(\d)/.exec(killed)![1];
    await lab.waitFor(new RegExp(`VIP 172\\.22\\.0\\.2 added on ironic-(?!${node})\\d`), 20_000, mark);
    await lab.waitFor(new RegExp(`restarted the agent on node-${node}`), 15_000, mark);

    // with the API server paused nobody can renew: the holder lets the VIP go (and nobody takes it) until it is back
    mark = lab.send('p');
    await lab.waitFor(/paused kube-apiserver/, 5_000, mark);
    await lab.waitFor(/VIP 172\.22\.0\.2 removed from/, 10_000, mark);
    mark = lab.send('p');
    await lab.waitFor(/resumed kube-apiserver/, 5_000, mark);
    await lab.waitFor(/VIP 172\.22\.0\.2 added on/, 20_000, mark);

    lab.send('q');
    expect(await lab.exited).to.equal(0);
    expect(lab.lines.join('\n')).to.contain('nothing left behind (no namespace, no process)');
    expect(namespacesOf(lab.child.pid!)).to.deep.equal([]);
  });
});
